package tables

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/internal/syncbuf"
)

// versionSource yields n rows keyed 0..n-1 whose every value carries the
// version number: ver = "v<version>", tag = "<key>@v<version>".
type versionSource struct {
	n, i    int
	version int
	fields  [][]byte
	buf     []byte
}

var versionColumns = []string{"key", "ver", "tag"}

func newVersionSource(n, version int) *versionSource {
	return &versionSource{n: n, version: version, fields: make([][]byte, 3)}
}

func (g *versionSource) Columns() []string { return versionColumns }
func (g *versionSource) Line() int64       { return int64(g.i) + 1 }
func (g *versionSource) Close() error      { return nil }

func (g *versionSource) Next() ([][]byte, error) {
	if g.i >= g.n {
		return nil, io.EOF
	}
	b := strconv.AppendInt(g.buf[:0], int64(g.i), 10)
	k := len(b)
	b = append(b, 'v')
	b = strconv.AppendInt(b, int64(g.version), 10)
	v := len(b)
	b = strconv.AppendInt(b, int64(g.i), 10)
	b = append(b, "@v"...)
	b = strconv.AppendInt(b, int64(g.version), 10)
	g.buf = b
	g.fields[0], g.fields[1], g.fields[2] = b[:k], b[k:v], b[v:]
	g.i++
	return g.fields, nil
}

// compileVersion writes a table of n rows of the given version to path.
func compileVersion(t testing.TB, path string, n, version int) {
	t.Helper()
	if _, err := compile.File(newVersionSource(n, version), path, compile.Options{Key: []string{"key"}}); err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
}

// writeFile writes b to path.
// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects log output for assertions.
type logBuffer = syncbuf.Buffer

func newTestLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// lookupVersion returns the version of key in the named table of snap,
// checking that the row's values agree on it.
func lookupVersion(snap *Snapshot, table string, key int) (int, error) {
	t := snap.LUT(table)
	if t == nil {
		return 0, fmt.Errorf("table %s absent", table)
	}
	k := strconv.Itoa(key)
	v, ok := t.Lookup([]byte(k))
	if !ok {
		return 0, fmt.Errorf("table %s: key %s not found", table, k)
	}
	return rowVersion(k, v.Col(1), v.Col(2))
}

func rowVersion(key string, ver, tag []byte) (int, error) {
	if len(ver) < 2 || ver[0] != 'v' {
		return 0, fmt.Errorf("key %s: bad ver %q", key, ver)
	}
	n, err := strconv.Atoi(string(ver[1:]))
	if err != nil {
		return 0, fmt.Errorf("key %s: bad ver %q", key, ver)
	}
	if want := key + "@v" + strconv.Itoa(n); string(tag) != want {
		return 0, fmt.Errorf("key %s: row mixes versions: ver %q, tag %q", key, ver, tag)
	}
	return n, nil
}

var (
	lutBinOnce sync.Once
	lutBinPath string
	lutBinErr  error
	lutBinDir  string
)

// lutBinary builds the lut command (without the race detector, so that
// compiling large fixtures is fast) once per test process.
func lutBinary(t testing.TB) string {
	t.Helper()
	lutBinOnce.Do(func() {
		lutBinDir, lutBinErr = os.MkdirTemp("", "lutkit-tables-test-")
		if lutBinErr != nil {
			return
		}
		lutBinPath = filepath.Join(lutBinDir, "lut")
		cmd := exec.Command("go", "build", "-o", lutBinPath, "github.com/lutkit/lutkit/cmd/lut")
		out, err := cmd.CombinedOutput()
		if err != nil {
			lutBinErr = fmt.Errorf("go build ./cmd/lut: %w\n%s", err, out)
		}
	})
	if lutBinErr != nil {
		t.Skipf("cannot build the lut command: %v", lutBinErr)
	}
	return lutBinPath
}

func TestMain(m *testing.M) {
	if cache := os.Getenv("LUTKIT_TEST_HOLD_CACHE"); cache != "" {
		os.Exit(holdCache(cache, os.Getenv("LUTKIT_TEST_HOLD_URL")))
	}
	code := m.Run()
	if lutBinDir != "" {
		os.RemoveAll(lutBinDir)
	}
	os.Exit(code)
}

// holdCache is the other process of TestRemoteCacheHeldByAnotherProcess:
// it opens a set of the store at url on the cache directory, says so,
// and holds it until its standard input closes.
func holdCache(cache, url string) int {
	set, err := Open(url, remoteOpts(cache))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer set.Close()
	os.Stdout.WriteString("holding\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// compileVersionFast writes a table of n rows of the given version to
// path, compiling with the lut command from a generated CSV when the table
// is large (the race detector slows in-process compiles tenfold).
func compileVersionFast(t testing.TB, path string, n, version int) {
	t.Helper()
	if n < 200_000 {
		compileVersion(t, path, n, version)
		return
	}
	bin := lutBinary(t)
	csvPath := path + ".csv"
	f, err := os.Create(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("key,ver,tag\n")
	src := newVersionSource(n, version)
	for {
		row, err := src.Next()
		if err != nil {
			break
		}
		w.Write(row[0])
		w.WriteByte(',')
		w.Write(row[1])
		w.WriteByte(',')
		w.Write(row[2])
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(csvPath)
	out, err := exec.Command(bin, "compile", "--key", "key", "--progress", "never", "--out", path, csvPath).CombinedOutput()
	if err != nil {
		t.Fatalf("lut compile: %v\n%s", err, out)
	}
}
