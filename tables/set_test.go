package tables

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/reader"
)

const smallRows = 2000

// startReaders runs goroutines that look up continuously in table and
// check every row is of version want(); it returns a stop function that
// reports the number of lookups.
func startReaders(t *testing.T, set *Set, table string, want func() int) func() int64 {
	t.Helper()
	var (
		stop    atomic.Bool
		n       atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		err     error
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := g
			for !stop.Load() {
				w := want()
				snap := set.Acquire()
				v, e := lookupVersion(snap, table, k%smallRows)
				snap.Release()
				if e == nil && v != w {
					e = fmt.Errorf("saw version %d, want %d", v, w)
				}
				if e != nil {
					errOnce.Do(func() { err = e })
				}
				n.Add(1)
				k += 7
			}
		}()
	}
	return func() int64 {
		stop.Store(true)
		wg.Wait()
		if err != nil {
			t.Errorf("lookups on %s: %v", table, err)
		}
		return n.Load()
	}
}

// damage returns the bytes of a good table file altered in one of the
// ways a file goes bad.
func damaged(t *testing.T, good []byte, how string) []byte {
	b := append([]byte(nil), good...)
	switch how {
	case "truncated":
		return b[:len(b)/2]
	case "byte flipped":
		// A byte in the DATA section: only the checksums catch it.
		h, err := format.DecodeHeader(b, int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		secs, err := format.DecodeSections(b, &h)
		if err != nil {
			t.Fatal(err)
		}
		d := secs[format.SectionData]
		b[d.Off+d.Len/2] ^= 0x01
	case "wrong magic":
		copy(b, "NOTALUT!")
	case "newer major version":
		binary.LittleEndian.PutUint16(b[8:], format.MajorVersion+1)
		binary.LittleEndian.PutUint64(b[120:], xxh3.Hash(b[:120]))
	case "empty":
		return nil
	default:
		t.Fatalf("unknown damage %q", how)
	}
	return b
}

// TestBadFilesDirectory drops damaged versions of a table into a watched
// directory (by atomic rename): each is rejected with a clear reason while
// lookups continue on the old version.
func TestBadFilesDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "live")
	must(t, os.Mkdir(dir, 0o755))
	good1 := filepath.Join(root, "v1.lut")
	compileVersion(t, good1, smallRows, 1)
	goodBytes, _ := os.ReadFile(good1)
	must(t, os.Link(good1, filepath.Join(dir, "customers.lut")))
	log, logs := newTestLogger(t)
	set, err := Open(dir, Options{PollInterval: 20 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	stopReaders := startReaders(t, set, "customers", func() int { return 1 })

	cases := []struct{ how, reason string }{
		{"truncated", "truncated"},
		{"byte flipped", "checksum mismatch"},
		{"wrong magic", "bad magic"},
		{"newer major version", "version"},
		{"empty", "empty"},
	}
	rej := uint64(0)
	for i, c := range cases {
		tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", i))
		writeFile(t, tmp, damaged(t, goodBytes, c.how))
		if err := os.Rename(tmp, filepath.Join(dir, "customers.lut")); err != nil {
			t.Fatal(err)
		}
		rej++
		waitFor(t, 5*time.Second, c.how+" rejected", func() bool { return set.Stats().Rejections >= rej })
		st := set.Stats()
		if !strings.Contains(st.LastRejection, c.reason) || !strings.Contains(st.LastRejection, "customers") {
			t.Errorf("%s: rejection %q does not say %q and name the table", c.how, st.LastRejection, c.reason)
		} else {
			t.Logf("%-20s rejected: %s", c.how, st.LastRejection)
		}
		if st.Generation != 1 {
			t.Errorf("%s: generation %d, want 1 (the old version)", c.how, st.Generation)
		}
	}
	// A directory where a file is expected. The swap cannot be atomic (a
	// directory cannot be renamed over a file): a poll between the remove
	// and the mkdir rejects the missing file once more.
	os.Remove(filepath.Join(dir, "customers.lut"))
	must(t, os.Mkdir(filepath.Join(dir, "customers.lut"), 0o755))
	waitFor(t, 5*time.Second, "directory rejected", func() bool {
		return strings.Contains(set.Stats().LastRejection, "not a regular file (a directory)")
	})
	t.Logf("%-20s rejected: %s", "directory", set.Stats().LastRejection)
	if n := set.Stats().Rejections; n != rej+1 && n != rej+2 {
		t.Errorf("directory: %d rejections, want %d (or %d with the missing file)", n, rej+1, rej+2)
	}
	rej = set.Stats().Rejections
	// The good version is still served; polls do not re-log a rejected
	// file.
	time.Sleep(100 * time.Millisecond)
	if st := set.Stats(); st.Rejections != rej || st.Generation != 1 {
		t.Errorf("after the bad files: %d rejections (want %d), generation %d", st.Rejections, rej, st.Generation)
	}
	if n := stopReaders(); n == 0 {
		t.Error("no lookups ran")
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"tables: rejected\" table=customers") {
		t.Errorf("rejections not logged:\n%s", logs)
	}
	st := set.Stats()
	if len(st.Rejected) != 1 || st.Rejected[0].Name != "customers" || st.Rejected[0].Rejections != rej {
		t.Errorf("per-table rejections: %+v", st.Rejected)
	}
	// Replacing the directory with a good new version publishes it.
	os.Remove(filepath.Join(dir, "customers.lut"))
	compileVersion(t, filepath.Join(dir, ".v2"), smallRows, 2)
	must(t, os.Rename(filepath.Join(dir, ".v2"), filepath.Join(dir, "customers.lut")))
	waitFor(t, 5*time.Second, "version 2", func() bool {
		snap := set.Acquire()
		defer snap.Release()
		v, err := lookupVersion(snap, "customers", 5)
		return err == nil && v == 2
	})
}

// buildDist builds a manifest directory of two .lut tables of the given
// version by hand (as Build would) and returns the manifest.
func writeManifestDir(t *testing.T, dir string, version int, tables ...string) *Manifest {
	t.Helper()
	m := &Manifest{Version: ManifestVersion, Writer: "test", Generated: time.Now().UTC()}
	for _, name := range tables {
		tmp := filepath.Join(dir, "."+name+".tmp")
		compileVersion(t, tmp, smallRows, version)
		sum, size, err := fsutil.FileSHA256(tmp)
		if err != nil {
			t.Fatal(err)
		}
		file := ArtifactName(name, KindLUT, sum)
		if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
		m.Tables = append(m.Tables, ManifestTable{Name: name, Kind: KindLUT, File: file, SHA256: sum, Size: size,
			Rows: smallRows, FormatVersion: "1.0"})
	}
	return m
}

func putManifest(t *testing.T, dir string, m *Manifest) {
	t.Helper()
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".manifest.tmp")
	writeFile(t, tmp, b)
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName)); err != nil {
		t.Fatal(err)
	}
}

// TestBadManifests: a manifest naming a missing file, with a wrong
// digest, not JSON, or naming a damaged file is rejected as a whole, and
// the old manifest's tables stay live.
func TestBadManifests(t *testing.T) {
	dir := t.TempDir()
	putManifest(t, dir, writeManifestDir(t, dir, 1, "customers", "accounts"))
	log, _ := newTestLogger(t)
	set, err := Open(dir, Options{PollInterval: 20 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	stop1 := startReaders(t, set, "customers", func() int { return 1 })
	stop2 := startReaders(t, set, "accounts", func() int { return 1 })

	m2 := writeManifestDir(t, dir, 2, "customers", "accounts")
	cases := []struct {
		what   string
		edit   func(m *Manifest) *Manifest
		raw    string
		reason string
	}{
		{what: "missing file", edit: func(m *Manifest) *Manifest {
			m.Tables[1].File = "accounts-0000000000000000.lut"
			return m
		}, reason: "table accounts: " + filepath.Join(dir, "accounts-0000000000000000.lut") + ": stat: no such file or directory"},
		{what: "wrong digest", edit: func(m *Manifest) *Manifest {
			m.Tables[0].SHA256 = strings.Repeat("ab", 32)
			return m
		}, reason: "digest mismatch"},
		{what: "wrong row count", edit: func(m *Manifest) *Manifest {
			m.Tables[0].Rows = 7
			return m
		}, reason: "manifest says 7"},
		{what: "file is a directory", edit: func(m *Manifest) *Manifest {
			must(t, os.Mkdir(filepath.Join(dir, "accounts-1111111111111111.lut"), 0o755))
			m.Tables[1].File = "accounts-1111111111111111.lut"
			return m
		}, reason: "not a regular file (a directory)"},
		{what: "path outside the directory", edit: func(m *Manifest) *Manifest {
			m.Tables[1].File = "../accounts.lut"
			return m
		}, reason: "must be a plain file name"},
		{what: "not JSON", raw: "{\"version\": 1, \"tables\": [", reason: "not a valid manifest"},
	}
	rej := uint64(0)
	for _, c := range cases {
		if c.raw != "" {
			tmp := filepath.Join(dir, ".m.tmp")
			writeFile(t, tmp, []byte(c.raw))
			must(t, os.Rename(tmp, filepath.Join(dir, ManifestName)))
		} else {
			var m Manifest
			b, err := json.Marshal(m2)
			must(t, err)
			must(t, json.Unmarshal(b, &m))
			putManifest(t, dir, c.edit(&m))
		}
		rej++
		waitFor(t, 5*time.Second, c.what+" rejected", func() bool { return set.Stats().Rejections >= rej })
		st := set.Stats()
		if !strings.Contains(st.LastRejection, c.reason) {
			t.Errorf("%s: rejection %q does not say %q", c.what, st.LastRejection, c.reason)
		} else {
			t.Logf("%-26s rejected: %s", c.what, st.LastRejection)
		}
		if st.Generation != 1 {
			t.Fatalf("%s: generation %d: the bad manifest was published", c.what, st.Generation)
		}
	}
	stop1()
	stop2()
	// The good manifest switches both tables at once.
	putManifest(t, dir, m2)
	waitFor(t, 5*time.Second, "manifest 2", func() bool { return set.Generation() == 2 })
	snap := set.Acquire()
	for _, name := range []string{"customers", "accounts"} {
		if v, err := lookupVersion(snap, name, 9); err != nil || v != 2 {
			t.Errorf("%s: version %d, %v", name, v, err)
		}
	}
	snap.Release()
}

// TestManifestSwitchesAsUnit swaps manifests of two tables under load: a
// snapshot never shows the two tables at different versions.
func TestManifestSwitchesAsUnit(t *testing.T) {
	dir := t.TempDir()
	const nver = 6
	ms := make([]*Manifest, nver+1)
	for v := 1; v <= nver; v++ {
		ms[v] = writeManifestDir(t, dir, v, "a", "b")
	}
	putManifest(t, dir, ms[1])
	set, err := Open(dir, Options{PollInterval: 10 * time.Millisecond, DataVerify: DataVerifyDigest})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Value
	var checks atomic.Int64
	ha, hb := set.Table("a"), set.Table("b")
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; !stop.Load(); k++ {
				snap := set.Acquire()
				va, e1 := lookupVersion(snap, "a", k%smallRows)
				vb, e2 := lookupVersion(snap, "b", (k*31)%smallRows)
				if ha.LUT(snap) != snap.LUT("a") || hb.LUT(snap) != snap.LUT("b") {
					bad.Store(fmt.Errorf("handles and names disagree"))
				}
				snap.Release()
				switch {
				case e1 != nil || e2 != nil:
					bad.Store(fmt.Errorf("one snapshot: %w", errors.Join(e1, e2)))
				case va != vb:
					bad.Store(fmt.Errorf("one snapshot: a at version %d, b at %d", va, vb))
				}
				checks.Add(1)
			}
		}()
	}
	for round := 0; round < 3; round++ {
		for v := 2; v <= nver; v++ {
			gen := set.Generation()
			putManifest(t, dir, ms[v])
			waitFor(t, 5*time.Second, fmt.Sprintf("manifest %d", v), func() bool { return set.Generation() > gen })
		}
		gen := set.Generation()
		putManifest(t, dir, ms[1])
		waitFor(t, 5*time.Second, "manifest 1", func() bool { return set.Generation() > gen })
	}
	stop.Store(true)
	wg.Wait()
	if e := bad.Load(); e != nil {
		t.Fatal(e)
	}
	st := set.Stats()
	t.Logf("%d checks over %d generations, %d rejections", checks.Load(), st.Generation, st.Rejections)
	if st.Rejections != 0 {
		t.Errorf("%d rejections: %s", st.Rejections, st.LastRejection)
	}
	for _, ts := range st.Tables {
		if ts.Digest == "" || ts.Rows != smallRows || ts.VerifyDuration == 0 {
			t.Errorf("table stats %+v", ts)
		}
	}
}

// TestReloadAndHandles covers the API without a watcher: Reload, handles
// on tables that appear later, removal, Stats and Close.
func TestReloadAndHandles(t *testing.T) {
	dir := t.TempDir()
	compileVersion(t, filepath.Join(dir, "a.lut"), 100, 1)
	set, err := Open(dir, Options{NoWatch: true, DataVerify: DataVerifyNone})
	if err != nil {
		t.Fatal(err)
	}
	hb := set.Table("b")
	var row reader.Row
	if hb.Get([]byte("1"), &row) {
		t.Fatal("absent table found a row")
	}
	compileVersion(t, filepath.Join(dir, "b.lut"), 100, 3)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if !hb.Get([]byte("1"), &row) || string(row.Col(1)) != "v3" {
		t.Fatalf("handle after reload: %q", row.Col(1))
	}
	if set.Generation() != 2 {
		t.Errorf("generation %d", set.Generation())
	}
	// No change: no new generation.
	if err := set.Reload(); err != nil || set.Generation() != 2 {
		t.Errorf("idle reload: %v, generation %d", err, set.Generation())
	}
	// A removed file keeps its table's version mapped: the set is not
	// published again without it.
	must(t, os.Remove(filepath.Join(dir, "a.lut")))
	if err := set.Reload(); err == nil || !strings.Contains(err.Error(), "table a") || !strings.Contains(err.Error(), "the file is gone") {
		t.Errorf("Reload after the removal: %v", err)
	}
	sn := set.Acquire()
	if names := sn.Names(); len(names) != 2 || set.Generation() != 2 {
		t.Errorf("after removal: %v, generation %d", names, set.Generation())
	}
	if v, err := lookupVersion(sn, "a", 3); err != nil || v != 1 {
		t.Errorf("removed table: %d, %v", v, err)
	}
	sn.Release()
	st := set.Stats()
	if st.Mode != "directory" || len(st.Tables) != 2 || st.Tables[0].Name != "a" || !st.Tables[0].Missing || st.Tables[1].Missing || st.Tables[1].Rows != 100 {
		t.Errorf("stats %+v", st)
	}
	// The file back: its new version is published.
	compileVersion(t, filepath.Join(dir, "a.lut"), 100, 4)
	must(t, set.Reload())
	sn = set.Acquire()
	if set.Generation() != 3 || set.Stats().Tables[0].Missing {
		t.Errorf("after the file came back: generation %d, stats %+v", set.Generation(), set.Stats().Tables)
	} else if v, err := lookupVersion(sn, "a", 3); err != nil || v != 4 {
		t.Errorf("table back: %d, %v", v, err)
	}
	sn.Release()
	set.Close()
	if snap := set.Acquire(); len(snap.Names()) != 0 {
		t.Errorf("after Close: %v", snap.Names())
	}
	if err := set.Reload(); err == nil {
		t.Error("Reload after Close succeeded")
	}
}

// TestOpenFailures: a manifest that cannot be loaded fails Open with the
// reason; a missing path too.
func TestOpenFailures(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ManifestName), []byte(`{"version": 1, "tables": [{"name": "x", "kind": "lut", "file": "x-0123456789abcdef.lut", "sha256": "`+strings.Repeat("0", 64)+`"}]}`))
	_, err := Open(dir, Options{NoWatch: true})
	if err == nil || !strings.Contains(err.Error(), "table x") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Open with a manifest naming a missing file: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "nope"), Options{}); err == nil {
		t.Error("Open of a missing path succeeded")
	}
}

// TestFIFOManifestRefused: a manifest that is a named pipe with no writer
// (in a directory, or named itself) fails Open, VerifyDir and
// ReadManifest at once with "not a regular file" and its path; reading it
// would block until a writer comes.
func TestFIFOManifestRefused(t *testing.T) {
	dir := t.TempDir()
	mp := filepath.Join(dir, ManifestName)
	must(t, syscall.Mkfifo(mp, 0o644))
	want := mp + ": reading the manifest: not a regular file (a named pipe)"
	for _, c := range []struct {
		what string
		try  func() error
		want string
	}{
		{"Open of the directory", func() error { _, err := Open(dir, Options{NoWatch: true}); return err }, want},
		{"Open of the manifest", func() error { _, err := Open(mp, Options{NoWatch: true}); return err }, want},
		{"VerifyDir", func() error { _, err := VerifyDir(dir); return err }, mp + ": not a regular file (a named pipe)"},
		{"ReadManifest", func() error { _, err := ReadManifest(mp); return err }, mp + ": not a regular file (a named pipe)"},
	} {
		done := make(chan error, 1)
		go func() { done <- c.try() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.what, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still blocked after 10 s", c.what)
		}
	}
}

// TestLocal: a Local follows swaps and releases what it pinned.
func TestLocal(t *testing.T) {
	dir := t.TempDir()
	compileVersion(t, filepath.Join(dir, "a.lut"), 100, 1)
	set, err := Open(dir, Options{NoWatch: true, DataVerify: DataVerifyNone})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	l := set.NewLocal()
	s1 := l.Snapshot()
	if l.Snapshot() != s1 {
		t.Fatal("unchanged set, different snapshots")
	}
	compileVersion(t, filepath.Join(dir, ".a"), 100, 2)
	must(t, os.Rename(filepath.Join(dir, ".a"), filepath.Join(dir, "a.lut")))
	must(t, set.Reload())
	s2 := l.Snapshot()
	if v, err := lookupVersion(s2, "a", 1); err != nil || v != 2 {
		t.Fatalf("after a swap: %d %v", v, err)
	}
	if s1.refs.Load()&snapFreed == 0 {
		t.Error("the old snapshot was not freed")
	}
	l.Close()
}
