package enrichd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/syncbuf"
)

// TestSwapUnderLoad streams events while the customers table is replaced
// 10 times and a corrupt version is dropped in: every event arrives once,
// enriched from exactly one version, and the corrupt file is rejected.
// 1M events normally, 200k under -race.
func TestSwapUnderLoad(t *testing.T) {
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 200_000
	}
	const rows = 20_000
	dir, build := t.TempDir(), t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), rows, 1)
	out := filepath.Join(build, "out.json")
	r := startDaemon(t, testConfig(t, dir, out))

	// The stream is sent in 11 parts; the table is replaced between
	// parts, so the swaps happen while events flow, whatever the speed.
	// Before each swap one event of the part just sent has been enriched:
	// with the version live when the part was sent, so that every version
	// enriches events however far the daemon lags behind the sender. The
	// versions are built beforehand, so that a swap follows that event at
	// once, while the rest of the part is on its way.
	const parts = 11
	versionFile := func(v int) string { return filepath.Join(build, fmt.Sprintf("v%d.lut", v)) }
	for v := 2; v <= parts; v++ {
		buildCustomers(t, versionFile(v), rows, v)
	}
	sent := make(chan struct{})
	next := make(chan struct{})
	sendDone := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", r.d.Addr("tcp").String())
		if err != nil {
			sendDone <- err
			close(sent)
			return
		}
		w := bufio.NewWriterSize(c, 1<<16)
		for p := range parts {
			for i := p * n / parts; i < (p+1)*n/parts; i++ {
				fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d cust=%d\n", i, i%rows+1)
			}
			if err := w.Flush(); err != nil {
				c.Close()
				sendDone <- err
				close(sent)
				return
			}
			if p < parts-1 {
				sent <- struct{}{}
				<-next
			}
		}
		sendDone <- c.Close()
	}()
	waitGen := func(gen uint64) {
		for deadline := time.Now().Add(30 * time.Second); r.d.Set().Generation() < gen; {
			if time.Now().After(deadline) {
				t.Fatalf("generation %d not reached", gen)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitEnriched := func(events uint64) {
		for deadline := time.Now().Add(2 * time.Minute); r.d.eventsOut.Load() <= events; {
			if time.Now().After(deadline) {
				t.Fatalf("%d events enriched, waiting for more than %d", r.d.eventsOut.Load(), events)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for v := 2; v <= parts; v++ {
		if _, ok := <-sent; !ok {
			t.Fatalf("sending: %v", <-sendDone)
		}
		// Part v-2 was sent with version v-1 live.
		waitEnriched(uint64((v - 2) * n / parts))
		if v == 6 {
			// A corrupt version first: rejected, v5 stays live.
			bad := filepath.Join(build, "bad.lut")
			must(t, os.WriteFile(bad, bytes.Repeat([]byte("garbage!"), 4096), 0o644))
			must(t, os.Rename(bad, filepath.Join(dir, "customers.lut")))
			for deadline := time.Now().Add(30 * time.Second); metric(t, r.d, "enrichd_table_swap_rejections_total") < 1; {
				if time.Now().After(deadline) {
					t.Fatal("corrupt table not rejected")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		must(t, os.Rename(versionFile(v), filepath.Join(dir, "customers.lut")))
		waitGen(uint64(v))
		next <- struct{}{}
	}
	if err := <-sendDone; err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, n, 5*time.Minute)
	time.Sleep(200 * time.Millisecond) // for any line written twice
	lines := readLines(t, out)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	idRE := regexp.MustCompile(`"message":"seq=(\d+) cust=(\d+)".*"customer":\{"Customer Id":"C(\d+)-(\d+)","Email":"u(\d+)@v(\d+)\.example"\}`)
	seen := make([]bool, n)
	versions := map[string]int{}
	for _, l := range lines {
		m := idRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected line %s", l)
		}
		seq, _ := strconv.Atoi(m[1])
		if seen[seq] {
			t.Fatalf("seq %d twice", seq)
		}
		seen[seq] = true
		if m[2] != m[3] || m[3] != m[5] || m[4] != m[6] {
			t.Fatalf("mixed enrichment: %s", l)
		}
		versions[m[4]]++
	}
	t.Logf("events per table version: %v", versions)
	if len(versions) != parts {
		t.Errorf("versions seen: %v, want each of 1 to %d", versions, parts)
	}
	if rej := metric(t, r.d, "enrichd_table_swap_rejections_total"); rej < 1 {
		t.Errorf("corrupt table not rejected (rejections %v)", rej)
	}
	if gen := metric(t, r.d, "enrichd_table_generation"); gen < 11 {
		t.Errorf("generation %v, want >= 11", gen)
	}
	if !r.d.Ready() {
		t.Errorf("daemon not ready after swaps")
	}
}

// TestBadInput: oversize lines, binary garbage, a half-open frame, 1,000
// idle connections and a sender that disconnects mid-frame; the daemon
// keeps serving and counts each.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 100, 1)
	out := filepath.Join(dir, "out.json")
	r := startDaemon(t, testConfig(t, dir, out))
	addr := r.d.Addr("tcp").String()

	var idle []net.Conn
	for range 1000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	// Half-open: a frame announced and never completed, connection kept.
	half := dialTCP(t, r.d, "tcp")
	defer half.Close()
	send(t, half, []byte("100 <13>1 - - - - - - cust=1 never finished"))
	// Disconnect mid-frame.
	mid := dialTCP(t, r.d, "tcp")
	send(t, mid, []byte("50 <13>1 - - - - - - cust=1 cut"))
	mid.Close()

	c := dialTCP(t, r.d, "tcp")
	var b bytes.Buffer
	b.WriteString("<13>1 - h app - - - seq=0 cust=1 " + strings.Repeat("x", 5000) + "\n") // oversize
	b.WriteString("\x00\xff\xfe binary \x01\x02 seq=1 cust=2 \xc3\x28\n")                 // garbage, no PRI
	b.WriteString("<13>1 - h app - - - seq=2 cust=3\n")
	send(t, c, b.Bytes())
	c.Close()
	// JSON input: a good line and a broken one.
	j := dialTCP(t, r.d, "json")
	send(t, j, []byte("{\"seq\":3,\"cust\":\"4\"}\n{\"seq\":4, broken\n"))
	j.Close()

	lines := waitLines(t, out, 5, 20*time.Second)
	byseq := bySeq(t, lines, "4")
	if m := byseq["0"]; m == nil || !hasTag(m, "_truncated") || len(m["message"].(string)) > 4096 {
		t.Errorf("oversize line: %v", m)
	}
	if m := byseq["1"]; m == nil || !hasTag(m, "_malformed") || get(m, "customer.Customer Id") != "C2-1" {
		t.Errorf("garbage line: %v", m)
	}
	if m := byseq["2"]; m == nil || get(m, "customer.Customer Id") != "C3-1" {
		t.Errorf("good line: %v", m)
	}
	if m := byseq["3"]; m == nil || get(m, "customer.Customer Id") != "C4-1" {
		t.Errorf("json line: %v", m)
	}
	if m := byseq["4"]; m == nil || !hasTag(m, "_jsonparsefailure") {
		t.Errorf("broken json line: %v", m)
	}
	time.Sleep(100 * time.Millisecond)
	checks := map[string]float64{
		`enrichd_events_truncated_total{input="tcp",type="tcp"}`:    1,
		`enrichd_parse_errors_total{input="tcp",type="tcp"}`:        1,
		`enrichd_parse_errors_total{input="json",type="tcp"}`:       1,
		`enrichd_frame_errors_total{input="tcp",type="tcp"}`:        1,
		`enrichd_listener_connections_active{listener="input:tcp"}`: 1001,
		`enrichd_events_in_total{input="tcp",type="tcp"}`:           3,
	}
	for s, want := range checks {
		if got := metric(t, r.d, s); got != want {
			t.Errorf("%s = %v, want %v", s, got, want)
		}
	}
	// Still serving.
	c = dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<13>1 - h app - - - seq=5 cust=5\n"))
	c.Close()
	waitLines(t, out, 6, 10*time.Second)
}

// TestGracefulShutdown runs the binary, sends events, and SIGTERMs it
// right after the sender closes: every event must be in the output.
//
// Up to a few MB of them are still in the socket buffers at the SIGTERM:
// the drain reads them for drain_read_grace, a bound in wall-clock time.
// A daemon starved of CPU on a loaded machine for longer than that loses
// the rest (with the default 500ms, it was seen to read 12,036 events of
// 100,000), so the grace here is generous; the drain ends at the closed
// connection's end all the same, not at the grace. The file's size just
// after the SIGTERM must leave events to come, or the test tested
// nothing. The events_out of the daemon's last log line ("shut down")
// must be the lines the file holds.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "enrichd")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/enrichd").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 1000, 1)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	out := filepath.Join(dir, "out.json")
	cfg := fmt.Sprintf(`
inputs: [{type: tcp, listen: %q}]
tables: {path: %q, verify: digest}
rules: [{name: customer, table: customers, field: cust, target: customer}]
outputs: [{type: file, path: %q}]
log: {level: info, format: json}
drain_read_grace: 1m
shutdown_timeout: 2m
`, addr, dir, out)
	cf := filepath.Join(dir, "enrichd.yaml")
	must(t, os.WriteFile(cf, []byte(cfg), 0o644))
	if o, err := exec.Command(bin, "--config", cf, "--check-config").CombinedOutput(); err != nil {
		t.Fatalf("--check-config: %v\n%s", err, o)
	}
	cmd := exec.Command(bin, "--config", cf)
	var stderr syncbuf.Buffer // read on failure while enrichd runs
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var c net.Conn
	for i := 0; ; i++ {
		var err error
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		if i > 200 {
			t.Fatalf("daemon not listening: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := 100_000
	if raceEnabled {
		n = 30_000
	}
	// The events are made first and sent in one write, as fast as the
	// daemon reads them: written one by one (under the race detector
	// above all), they came so slowly that the daemon had written them all
	// by the SIGTERM, in two runs of three.
	var events []byte
	for i := range n {
		events = fmt.Appendf(events, "<13>1 - h app - - - seq=%d cust=%d\n", i, i%1000+1)
	}
	_, err := c.Write(events)
	must(t, err)
	must(t, c.Close())
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	// The file's size just after the SIGTERM is at least what was written
	// at it: the lines past it were still in flight then (in the socket,
	// the pipeline or the output's buffer).
	var atTerm int64
	if fi, err := os.Stat(out); err == nil {
		atTerm = fi.Size()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	must(t, err)
	inFlight := bytes.Count(b[min(atTerm, int64(len(b))):], []byte{'\n'})
	if inFlight == 0 {
		t.Fatalf("the file held every event just after the SIGTERM: none was in flight, the test tested nothing")
	}
	t.Logf("%d of the %d events were not yet in the file at the SIGTERM", inFlight, n)
	lines := readLines(t, out)
	if len(lines) != n {
		t.Fatalf("%d lines after SIGTERM, want %d\n%s", len(lines), n, stderr.String())
	}
	checkExactlyOnce(t, lines, n, 1000)
	if out, ok := shutDownEventsOut(stderr.String()); !ok || out != len(lines) {
		t.Errorf("the shut down log line counts %d events out (found: %v), but the file holds %d lines\n%s",
			out, ok, len(lines), stderr.String())
	}
}

// shutDownEventsOut returns the events_out of the "shut down" line of a
// JSON log, and whether there is one.
func shutDownEventsOut(log string) (int, bool) {
	for _, l := range strings.Split(log, "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			EventsOut *int   `json:"events_out"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "shut down" && rec.EventsOut != nil {
			return *rec.EventsOut, true
		}
	}
	return 0, false
}

func TestConfigErrors(t *testing.T) {
	f := func(yml, want string) {
		t.Helper()
		_, err := ParseConfig("e.yaml", []byte(yml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	f("inputs: [{type: tcp}]\noutputs: [{type: stdout}]\n", "e.yaml:1:10: inputs[0].listen: required")
	f("inputs:\n  - {type: tcp, listen: \"x:1\", bogus: 1}\noutputs: [{type: stdout}]\n", "e.yaml:2:32: inputs[0].bogus: unknown field")
	f("inputs: [{type: file, path: x}]\noutputs: [{type: stdout}]\ntables: {path: d}\nrules:\n  - table: t\n    field: a\n    columns: all\n    mmdb_fields: {a: b}\n", "e.yaml:7:14: rules[0].columns")
	f("inputs: [{type: file, path: x}]\noutputs: [{type: stdout}]\npipeline:\n  flush_interval: soon\n", "e.yaml:4:19: pipeline.flush_interval")
	f("inputs: [{type: file, path: x}]\noutputs: [{type: stdout}]\ntables: {path: d}\nrules:\n  - {table: t, field: a, target: x}\n  - {table: u, field: b, target: x.y}\n", "collides")
	f("tables: {path: d}\n", "at least one input is required")
	f("inputs: [{type: file, path: x}]\n", "at least one output is required")
	_, err := ParseConfig("e.yaml", []byte("inputs: [{type: file, path: x}]\noutputs: [{type: stdout}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A lookup server needs neither inputs nor outputs.
	for _, yml := range []string{"tables: {path: d}\nhttp: {listen: \"127.0.0.1:0\"}\n", "tables: {path: d}\nmemcached: {listen: \"127.0.0.1:0\"}\n"} {
		if _, err := ParseConfig("e.yaml", []byte(yml)); err != nil {
			t.Errorf("lookup-only config %q: %v", yml, err)
		}
	}
}

// TestFileInputLastLine: a file without a final newline loses nothing.
func TestFileInputLastLine(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	must(t, os.WriteFile(in, []byte("a=1\nb=2\nlast=3"), 0o644))
	out := filepath.Join(dir, "out.json")
	cfg, err := ParseConfig("t.yaml", []byte(fmt.Sprintf("inputs: [{type: file, path: %q}]\noutputs: [{type: file, path: %q}]\n", in, out)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if got := strings.Count(string(b), "\n"); got != 3 || !strings.Contains(string(b), `"message":"last=3"`) {
		t.Fatalf("output:\n%s", b)
	}
	_ = io.EOF
}

// TestNewFailsCleanly: a daemon that cannot start (its port is taken)
// returns the error and releases what it opened.
func TestNewFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg := testConfig(t, dir, filepath.Join(dir, "out.json"))
	cfg.Inputs[0].Listen = ln.Addr().String()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	d, err := New(cfg, slog.New(slog.DiscardHandler))
	if err == nil || d != nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("New = %v, %v; want the listen error", d, err)
	}
}

// bySeq decodes the output lines and maps each by its event's seq: the
// seq field, or seq=N in its message; the line whose message holds the
// unparsed JSON `"seq":broken` is mapped to broken.
func bySeq(t *testing.T, lines []string, broken string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	for _, l := range lines {
		m := decode(t, l)
		s := fmt.Sprint(m["seq"])
		if msg, ok := m["message"].(string); ok {
			if sm := seqRE.FindStringSubmatch(msg); sm != nil {
				s = sm[1]
			} else if strings.Contains(msg, `"seq":`+broken) {
				s = broken
			}
		}
		got[s] = m
	}
	return got
}
