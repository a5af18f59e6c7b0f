package rows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/syncbuf"
	"github.com/lutkit/lutkit/internal/testfiles"
)

// bin holds the lut and enrichd binaries TestMain builds.
var bin string

func TestMain(m *testing.M) {
	var err error
	if bin, err = os.MkdirTemp("", "interop-rows-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, c := range []string{"lut", "enrichd"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, c), "github.com/lutkit/lutkit/cmd/"+c)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", c, err)
			os.RemoveAll(bin)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(bin)
	os.Exit(code)
}

// program returns the path of a client on PATH, or ends the test (a
// failure under CI=true) naming its Debian package.
func program(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testfiles.Missing(t, fmt.Sprintf("%s (Debian package %s)", name, pkg))
	}
	return p
}

// run runs a command and returns its standard output; it fails the test
// unless the command exits 0.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// The columns and the hostile row: quotes, a backslash, <>& (HTML that
// encoding/json would escape by default), every kind of control character
// (tab, newline and carriage return inside a quoted CSV field, \b and \f,
// which encoding/json writes short, the others, DEL), U+2028 and U+2029,
// multi-byte UTF-8, and a 5 KB value; a column name that needs escaping
// too.
var (
	columns = []string{"id", "name", "note", "big", `we"ird <col>&`}
	hostile = []string{
		"h1",
		`q"uote \back \" <a href="x">&amp;</a>`,
		"tab\there nl\nthere cr\rthere \b\f \x01\x07\x1b\x1f del\x7f line\u2028sep para\u2029sep é 日本 😀",
		strings.Repeat(`5 KB of "text" with \ and <b> & é `, 5120/34+1)[:5120],
		"",
	}
)

// reference is the row as encoding/json writes an object of strings with
// HTML escaping off, keys in column order; the project writes \b and \f as
// \u0008 and \u000c (its escaper's one difference).
func reference(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, c := range columns {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
		b.Truncate(b.Len() - 1)
		b.WriteByte(':')
		if err := enc.Encode(hostile[i]); err != nil {
			t.Fatal(err)
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return []byte(strings.NewReplacer(`\\`, `\\`, `\b`, `\u0008`, `\f`, `\u000c`).Replace(b.String()))
}

func csvField(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// writeSource writes the CSV: the hostile row, a plain one, and a row with
// invalid UTF-8 at line 5 (the hostile row spans lines 2 and 3), field 3,
// which starts at byte column 17 (every field is quoted).
func writeSource(t *testing.T, path string) {
	t.Helper()
	var b strings.Builder
	row := func(fields ...string) {
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(csvField(f))
		}
		b.WriteString("\n")
	}
	row(columns...)
	row(hostile...)
	row("p1", "plain", "row", "x", "y")
	row("bad", "invalid", "utf-8 \xff\xfe here", "x", "y")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestHostileRow compiles the hostile row with lut and reads it back
// through every program that writes rows: the bytes are the same
// everywhere and are encoding/json's.
func TestHostileRow(t *testing.T) {
	curl := program(t, "curl", "curl")
	memccat := program(t, "memccat", "libmemcached-tools")
	lut, enrichd := filepath.Join(bin, "lut"), filepath.Join(bin, "enrichd")
	dir := t.TempDir()
	src := filepath.Join(dir, "customers.csv")
	writeSource(t, src)
	tdir := filepath.Join(dir, "tables")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(tdir, "customers.lut")

	// Invalid UTF-8 in the source: the compile names the place, and no
	// table ever holds it (with --skip-bad-rows the row is left out).
	cmd := exec.Command(lut, "compile", "--key", "id", "--out", table, src)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "customers.csv:5:17:") || !strings.Contains(string(out), "UTF-8") {
		t.Fatalf("lut compile of invalid UTF-8: %v\n%s", err, out)
	}
	run(t, lut, "compile", "--key", "id", "--skip-bad-rows", "--out", table, src)
	if err := exec.Command(lut, "get", table, "bad").Run(); err == nil {
		t.Fatal("the row with invalid UTF-8 is in the table")
	}

	want := reference(t)
	got := map[string][]byte{}
	got["lut get"] = bytes.TrimSuffix(run(t, lut, "get", table, "h1"), []byte("\n"))
	for _, l := range bytes.Split(run(t, lut, "export", table, "--format", "jsonl"), []byte("\n")) {
		if bytes.HasPrefix(l, []byte(`{"id":"h1"`)) {
			got["lut export --format jsonl"] = l
		}
	}

	// enrichd: the HTTP API, the memcached listener, and an event
	// enriched with the whole row.
	httpAddr, mcAddr, tcpAddr := freePort(t), freePort(t), freePort(t)
	out := filepath.Join(dir, "out.json")
	conf := filepath.Join(dir, "enrichd.yaml")
	err := os.WriteFile(conf, []byte(fmt.Sprintf(`
inputs: [{type: tcp, listen: %q, format: raw}]
tables: {path: %q}
rules: [{name: customer, table: customers, field: id, target: customer}]
outputs: [{type: file, path: %q}]
http: {listen: %q}
memcached: {listen: %q, default_table: customers}
log: {level: warn}
drain_read_grace: 50ms
`, tcpAddr, tdir, out, httpAddr, mcAddr)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	run(t, enrichd, "--config", conf, "--check-config")
	d := exec.Command(enrichd, "--config", conf)
	var logs syncbuf.Buffer // read on failure while enrichd runs
	d.Stderr = &logs
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Process.Signal(os.Interrupt); err != nil {
			t.Errorf("stopping enrichd: %v", err)
		}
		if err := d.Wait(); err != nil {
			t.Errorf("enrichd: %v after SIGINT", err)
		}
		if t.Failed() {
			t.Logf("enrichd:\n%s", logs.String())
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := http.Get("http://" + httpAddr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("enrichd not ready\n%s", logs.String())
		}
	}
	got["HTTP API (curl)"] = bytes.TrimSuffix(run(t, curl, "-sS", "--fail", "http://"+httpAddr+"/v1/tables/customers/h1"), []byte("\n"))
	got["memcached (memccat)"] = bytes.TrimSuffix(run(t, memccat, "--servers="+mcAddr, "customers:h1"), []byte("\n"))

	// The event carries invalid UTF-8 too: each of its bytes is written
	// as \ufffd, as encoding/json writes it.
	c, err := net.Dial("tcp", tcpAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "id=h1 junk=\xff\xfe<&>\n")
	c.Close()
	var line []byte
	for deadline := time.Now().Add(30 * time.Second); len(line) == 0; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(out); bytes.HasSuffix(b, []byte("\n")) {
			line = bytes.TrimSuffix(b, []byte("\n"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no enriched event\n%s", logs.String())
		}
	}
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatalf("enrichd wrote %s: %v", line, err)
	}
	got["enrichd event"] = ev["customer"]
	if m := string(ev["message"]); m != `"id=h1 junk=\ufffd\ufffd<&>"` {
		t.Errorf("enrichd wrote the message as %s, want each invalid byte as \\ufffd and <&> as they are", m)
	}

	for _, who := range []string{"lut get", "lut export --format jsonl", "HTTP API (curl)", "memcached (memccat)", "enrichd event"} {
		if g := got[who]; !bytes.Equal(g, want) {
			i := 0
			for i < min(len(g), len(want)) && g[i] == want[i] {
				i++
			}
			from := max(0, i-40)
			t.Errorf("%s wrote %d bytes, encoding/json %d; they differ at byte %d:\n got %q\nwant %q",
				who, len(g), len(want), i, g[from:min(len(g), i+40)], want[from:min(len(want), i+40)])
		}
	}
	if !bytes.Contains(want, []byte(`<a href=\"x\">&amp;</a>`)) || !bytes.Contains(want, []byte(`\u2028`)) || len(want) < 5120 {
		t.Fatalf("the reference lost what it is meant to hold: %.200s", want)
	}
}
