package enrichd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/enrichtest"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/tables"
)

// streamer sends numbered events (seq=N) to a tcp input until stopped.
type streamer struct {
	sent     atomic.Int64 // events written and flushed
	stop     chan struct{}
	done     chan error
	pauseReq chan struct{}
	pausedAt chan int64
	resumeCh chan struct{}
}

const faultRows = 20_000

func startStreamer(t *testing.T, addr net.Addr) *streamer {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	s := &streamer{stop: make(chan struct{}), done: make(chan error, 1),
		pauseReq: make(chan struct{}), pausedAt: make(chan int64), resumeCh: make(chan struct{})}
	go func() {
		w := bufio.NewWriter(c)
		for i := 0; ; i++ {
			fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d cust=%d src=%d.%d.%d.%d\n",
				i, 1+(i*7919)%faultRows, 1+i*7%223, i*13%256, i*29%256, 1+i%250)
			if i%100 == 99 {
				if err := w.Flush(); err != nil {
					c.Close()
					s.done <- err
					return
				}
				s.sent.Store(int64(i + 1))
				select {
				case <-s.stop:
					s.done <- c.Close()
					return
				case <-s.pauseReq:
					s.pausedAt <- int64(i + 1)
					<-s.resumeCh
				default:
				}
				// A steady stream rather than a flood, so that the
				// phases of the test see events flow through each.
				time.Sleep(time.Millisecond)
			}
		}
	}()
	return s
}

// pause stops sending; it returns how many events were sent.
func (s *streamer) pause() int64 {
	s.pauseReq <- struct{}{}
	return <-s.pausedAt
}

func (s *streamer) resume() { s.resumeCh <- struct{}{} }

// waitMore waits until at least n more events than now are sent.
func (s *streamer) waitMore(t *testing.T, n int64) int64 {
	t.Helper()
	from := s.sent.Load()
	for deadline := time.Now().Add(2 * time.Minute); s.sent.Load() < from+n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d events sent, waiting for %d", s.sent.Load(), from+n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.sent.Load()
}

func (s *streamer) end(t *testing.T) int {
	t.Helper()
	close(s.stop)
	if err := <-s.done; err != nil {
		t.Fatalf("sending: %v", err)
	}
	return int(s.sent.Load())
}

// waitSample polls a sample of /metrics until cond holds.
func waitSample(t *testing.T, d *Daemon, sample string, cond func(float64) bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(metric(t, d, sample)); {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after a minute", sample, metric(t, d, sample))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var faultSeqRE = regexp.MustCompile(`"message":"seq=(\d+) `)

// outputBySeq waits until the output holds n lines, checks that they are
// events 0 to n-1 once each, and returns them by seq.
func outputBySeq(t *testing.T, path string, n int) []map[string]any {
	t.Helper()
	waitLines(t, path, n, 5*time.Minute)
	lines := readLines(t, path)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d (every event sent, once)", len(lines), n)
	}
	bySeq := make([]map[string]any, n)
	for _, l := range lines {
		m := faultSeqRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected line %s", l)
		}
		seq, _ := strconv.Atoi(m[1])
		if seq >= n || bySeq[seq] != nil {
			t.Fatalf("seq %d out of range or twice", seq)
		}
		bySeq[seq] = decodeLine(t, l)
	}
	return bySeq
}

func decodeLine(t *testing.T, l string) map[string]any {
	t.Helper()
	return enrichtest.Decode(t, l)
}

// readyz returns the body of /readyz.
func readyz(t *testing.T, d *Daemon) string {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// TestTableTruncatedInPlace truncates a live table file in place under a
// stream of numbered events, then rewrites it with garbage in place: the
// daemon survives, every event sent is written once, the events sent
// after the fault was counted carry the miss tags, the fault is counted
// (enrichd_table_faults_total), the table reported damaged (metric,
// /readyz, log), enrichd_lookup_table_missing_total counts the events
// tagged, and a good version renamed in is used again. The watcher is
// off, so the fault is met by a lookup.
func TestTableTruncatedInPlace(t *testing.T) {
	for _, c := range []struct{ table, kind, file, missTag string }{
		{"customers", "lut", "customers.lut", "customer_miss"},
		{"geo", "mmdb", "geo.mmdb", ""},
	} {
		t.Run(c.kind, func(t *testing.T) {
			dir, build := t.TempDir(), t.TempDir()
			buildCustomers(t, filepath.Join(dir, "customers.lut"), faultRows, 1)
			// A copy of the city MMDB of its own, to truncate.
			mm, err := os.ReadFile(testfiles.CityMMDB(t))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(dir, "geo.mmdb"), mm, 0o644))
			cfg := testConfig(t, dir, filepath.Join(build, "out.json"))
			cfg.Tables.PollInterval, cfg.Tables.NoNotify = -1, true
			r, logs := startDaemonLogged(t, cfg)
			s := startStreamer(t, r.d.Addr("tcp"))
			s.waitMore(t, 5000)
			path := filepath.Join(dir, c.file)
			fi, err := os.Stat(path)
			must(t, err)
			must(t, os.Truncate(path, fi.Size()/2))
			faults := fmt.Sprintf("enrichd_table_faults_total{table=%q}", c.table)
			waitSample(t, r.d, faults, func(v float64) bool { return v >= 1 })
			afterFault := s.sent.Load()
			s.waitMore(t, 3000)
			// Garbage over the whole file, in place.
			must(t, os.WriteFile(path, bytes.Repeat([]byte("garbage!"), int(fi.Size()/8)), 0o644))
			s.waitMore(t, 3000)
			if v := metric(t, r.d, fmt.Sprintf("enrichd_table_damaged{kind=%q,table=%q}", c.kind, c.table)); v != 1 {
				t.Errorf("enrichd_table_damaged = %v, want 1", v)
			}
			if body := readyz(t, r.d); !strings.Contains(body, "table "+c.table+" damaged") {
				t.Errorf("/readyz does not report the damage: %q", body)
			}
			// Every event sent so far written, a good version renamed in
			// replaces the damaged one.
			afterSwap := s.pause()
			waitLines(t, r.out, int(afterSwap), 5*time.Minute)
			good := filepath.Join(build, "good")
			if c.kind == "lut" {
				buildCustomers(t, good, faultRows, 2)
			} else {
				must(t, os.WriteFile(good, mm, 0o644))
			}
			must(t, os.Rename(good, path))
			if err := r.d.Set().Reload(); err != nil {
				t.Fatalf("Reload: %v", err)
			}
			s.resume()
			s.waitMore(t, 3000)
			n := s.end(t)
			bySeq := outputBySeq(t, r.out, n)
			for seq, m := range bySeq {
				missed := hasTag(m, "_table_missing") || c.missTag != "" && hasTag(m, c.missTag)
				switch {
				case int64(seq) >= afterFault && int64(seq) < afterSwap && (!hasTag(m, "_table_missing") || c.missTag != "" && !hasTag(m, c.missTag)):
					t.Fatalf("seq %d, sent after the fault, is not tagged a miss: %v", seq, m)
				case int64(seq) >= afterSwap && missed:
					t.Fatalf("seq %d, sent after the new version, is tagged a miss: %v", seq, m)
				}
			}
			// The other table kept enriching; the new version enriches.
			for seq, m := range bySeq {
				id, _ := enrichtest.Get(m, "customer.Customer Id").(string)
				want := fmt.Sprintf("C%d-1", 1+(seq*7919)%faultRows)
				switch {
				case c.kind == "lut" && int64(seq) >= afterSwap:
					want = fmt.Sprintf("C%d-2", 1+(seq*7919)%faultRows)
				case c.kind == "lut" && int64(seq) >= afterFault:
					want = "MISS" // the rule's on_miss defaults
				}
				if (c.kind == "mmdb" || int64(seq) >= afterFault) && id != want {
					t.Fatalf("seq %d: customer %q, want %q: %v", seq, id, want, m)
				}
			}
			if v := metric(t, r.d, fmt.Sprintf("enrichd_table_damaged{kind=%q,table=%q}", c.kind, c.table)); v != 0 {
				t.Errorf("after the new version: enrichd_table_damaged = %v, want 0", v)
			}
			if v := metric(t, r.d, faults); v < 1 {
				t.Errorf("%s = %v", faults, v)
			}
			if !strings.Contains(logs.String(), "tables: table damaged") || !strings.Contains(logs.String(), "table="+c.table) {
				t.Errorf("the damage is not logged:\n%s", logs)
			}
			if v := metric(t, r.d, "enrichd_events_out_total"); v != float64(n) {
				t.Errorf("enrichd_events_out_total = %v, want %d", v, n)
			}
			// The misses counted are the events tagged in the file.
			tagged := 0
			for _, m := range bySeq {
				if hasTag(m, "_table_missing") {
					tagged++
				}
			}
			if v := metricSum(t, r.d, "enrichd_lookup_table_missing_total{"); v != float64(tagged) {
				t.Errorf("enrichd_lookup_table_missing_total = %v, but %d events in the file are tagged _table_missing", v, tagged)
			}
			t.Logf("%d events, fault counted after %d, new version after %d, %v faults, %d misses", n, afterFault, afterSwap, metric(t, r.d, faults), tagged)
		})
	}
}

// TestTableTruncatedWatched: the same truncation with the watcher on
// (fsnotify and polling, as the daemon runs by default): whichever sees
// it first, a lookup's fault or the watcher's check of the file, the
// table is marked damaged, the daemon survives and every event is
// written once; events sent after the damage was reported are misses.
func TestTableTruncatedWatched(t *testing.T) {
	dir, build := t.TempDir(), t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), faultRows, 1)
	r, _ := startDaemonLogged(t, testConfig(t, dir, filepath.Join(build, "out.json")))
	s := startStreamer(t, r.d.Addr("tcp"))
	s.waitMore(t, 5000)
	path := filepath.Join(dir, "customers.lut")
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, fi.Size()/2))
	waitSample(t, r.d, `enrichd_table_damaged{kind="lut",table="customers"}`, func(v float64) bool { return v == 1 })
	after := s.sent.Load()
	s.waitMore(t, 3000)
	n := s.end(t)
	for seq, m := range outputBySeq(t, r.out, n) {
		if int64(seq) >= after && (!hasTag(m, "customer_miss") || !hasTag(m, "_table_missing")) {
			t.Fatalf("seq %d, sent after the damage, is not a miss: %v", seq, m)
		}
	}
	t.Logf("%d events, damage reported after %d, %v faults", n, after, metric(t, r.d, `enrichd_table_faults_total{table="customers"}`))
}

// TestTableDirectoryRemoved removes the table directory under a stream
// of numbered events: the set is not published again, the last version
// keeps enriching (every event once, none tagged _table_missing, and
// enrichd_lookup_table_missing_total 0), the removal is logged and
// reported (metrics), and the directory back with a new version is
// loaded.
func TestTableDirectoryRemoved(t *testing.T) {
	root, build := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "tables")
	must(t, os.Mkdir(dir, 0o755))
	buildCustomers(t, filepath.Join(dir, "customers.lut"), faultRows, 1)
	r, logs := startDaemonLogged(t, testConfig(t, dir, filepath.Join(build, "out.json")))
	s := startStreamer(t, r.d.Addr("tcp"))
	s.waitMore(t, 5000)
	must(t, os.RemoveAll(dir))
	waitSample(t, r.d, `enrichd_table_file_missing{kind="lut",table="customers"}`, func(v float64) bool { return v == 1 })
	waitSample(t, r.d, "enrichd_table_swap_rejections_total", func(v float64) bool { return v >= 1 })
	afterRemoval := s.sent.Load()
	s.waitMore(t, 5000)
	if g := metric(t, r.d, "enrichd_table_generation"); g != 1 {
		t.Errorf("generation %v after the removal, want 1", g)
	}
	if body := readyz(t, r.d); !strings.Contains(body, "table customers: its file is gone") {
		t.Errorf("/readyz does not report the missing file: %q", body)
	}
	// Every event sent so far written, the directory back with version 2.
	afterBack := s.pause()
	waitLines(t, r.out, int(afterBack), 5*time.Minute)
	tmp := filepath.Join(root, "new")
	must(t, os.Mkdir(tmp, 0o755))
	buildCustomers(t, filepath.Join(tmp, "customers.lut"), faultRows, 2)
	must(t, os.Symlink(testfiles.CityMMDB(t), filepath.Join(tmp, "geo.mmdb")))
	must(t, os.Rename(tmp, dir))
	waitSample(t, r.d, "enrichd_table_generation", func(v float64) bool { return v == 2 })
	s.resume()
	s.waitMore(t, 3000)
	n := s.end(t)
	idRE := regexp.MustCompile(`^C(\d+)-(\d+)$`)
	for seq, m := range outputBySeq(t, r.out, n) {
		id, _ := enrichtest.Get(m, "customer.Customer Id").(string)
		v := idRE.FindStringSubmatch(id)
		if v == nil {
			t.Fatalf("seq %d is not enriched: %v", seq, m)
		}
		if c := strconv.Itoa(1 + (seq*7919)%faultRows); v[1] != c {
			t.Fatalf("seq %d: customer %s, want %s", seq, v[1], c)
		}
		switch {
		case int64(seq) < afterBack && v[2] != "1":
			t.Fatalf("seq %d, sent before the directory came back, has version %s", seq, v[2])
		case int64(seq) >= afterBack && v[2] != "2":
			t.Fatalf("seq %d, sent after the directory came back, has version %s", seq, v[2])
		}
		if hasTag(m, "_table_missing") {
			t.Fatalf("seq %d: a table is missing: %v", seq, m)
		}
	}
	// Logged as the file gone, or as the directory gone when no load
	// saw the directory half removed.
	if l := logs.String(); !strings.Contains(l, `msg="tables: rejected" table=customers`) && !strings.Contains(l, "reading the directory: open: no such file or directory (the tables mapped stay live)") {
		t.Errorf("the removal is not logged:\n%s", logs)
	}
	if v := metric(t, r.d, `enrichd_table_file_missing{kind="lut",table="customers"}`); v != 0 {
		t.Errorf("after the directory came back: enrichd_table_file_missing = %v", v)
	}
	// No lookup missed its table, as no event in the file is tagged so.
	if v := metricSum(t, r.d, "enrichd_lookup_table_missing_total{"); v != 0 {
		t.Errorf("enrichd_lookup_table_missing_total = %v, but no event in the file is tagged _table_missing", v)
	}
	t.Logf("%d events, removal reported after %d, directory back after %d", n, afterRemoval, afterBack)
}

// TestNetworkCountFault: the background count of an .mmdb table's
// networks (enrichd_table_rows) on a file truncated in place under it
// marks the table damaged and counts nothing, instead of a SIGBUS.
func TestNetworkCountFault(t *testing.T) {
	dir := t.TempDir()
	mm, err := os.ReadFile(testfiles.CityMMDB(t))
	must(t, err)
	path := filepath.Join(dir, "geo.mmdb")
	must(t, os.WriteFile(path, mm, 0o644))
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest})
	must(t, err)
	defer set.Close()
	sn := set.Acquire()
	ts, ok := sn.Table("geo")
	sn.Release()
	if !ok {
		t.Fatalf("geo not loaded: %+v", set.Stats())
	}
	must(t, os.Truncate(path, 4096))
	if n := walkNetworks(set, tableVersion{set, "geo", ts.Generation}); n != -1 {
		t.Fatalf("counted %d networks in a file truncated to 4 KiB", n)
	}
	if st := set.Stats(); !damaged(st, "geo") {
		t.Errorf("geo not marked damaged after the fault: %+v", st)
	}
}

func damaged(st tables.Stats, name string) bool {
	for _, t := range st.Tables {
		if t.Name == name {
			return t.Damaged
		}
	}
	return false
}
