package engine

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// TestAppendRow: a whole row is encoded as an object of every column,
// whatever its values hold: bytes to escape (in any word of a value, in
// the last bytes of the record), multi-byte UTF-8, empty values, values
// of every length around a word, and a column name longer than a padded
// key.
func TestAppendRow(t *testing.T) {
	long := strings.Repeat("column name longer than thirty-two bytes ", 2)
	var csv strings.Builder
	fmt.Fprintf(&csv, "Index,a,%s,b\n", long)
	want := map[int][3]string{}
	quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	add := func(a, l, b string) {
		i := len(want) + 1
		want[i] = [3]string{a, l, b}
		fmt.Fprintf(&csv, "%d,%s,%s,%s\n", i, quote(a), quote(l), quote(b))
	}
	for n := range 70 { // around a word, and around a fixed-size move
		s := strings.Repeat("x", n)
		add(s, s, s)
		for _, c := range []string{`"`, `\`, "\t", "\n", "é", "\u2028", "<"} {
			add(s+c, s, s)      // in the first value
			add(s, s, s+c)      // in the record's last bytes
			add(c+s, c+s+c, "") // everywhere, an empty last value
		}
	}
	dir := t.TempDir()
	compileCSV(t, filepath.Join(dir, "customers.lut"), csv.String(), "Index")
	lines := encodeCustomers(t, dir, len(want))
	if len(lines) != len(want) {
		t.Fatalf("%d lines for %d events", len(lines), len(want))
	}
	for i, l := range lines {
		m := decode(t, l)
		w := want[i+1]
		c, _ := m["customer"].(map[string]any)
		if len(c) != 4 || c["Index"] != fmt.Sprint(i+1) || c["a"] != w[0] || c[long] != w[1] || c["b"] != w[2] {
			t.Fatalf("row %d: got %q, want a=%q long=%q b=%q: %s", i+1, c, w[0], w[1], w[2], l)
		}
	}
}

// TestAppendRowDamaged: a row whose value end offsets are damaged (a file
// opened without verification) is still written as valid JSON, its bad
// values empty, as Cols gives them.
func TestAppendRowDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "customers.lut")
	compileCSV(t, path, "Index,a,b\n1,AAAA,BBBB\n2,CCCC,DDDD\n", "Index")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Row 1 as FORMAT.md lays it out: key length 1, value ends 1, 5, 9
	// (Index, a, b), key "1", values "1AAAABBBB". Move a's end past the
	// values, or before its start.
	rec := []byte("\x01\x00\x01\x00\x05\x00\x09\x00" + "1" + "1AAAABBBB")
	if bytes.Count(data, rec) != 1 {
		t.Fatalf("row 1 not found once in the file as laid out by FORMAT.md")
	}
	at := bytes.Index(data, rec)
	for _, c := range []struct {
		off  int
		end  byte
		want map[string]any
	}{
		{4, 10, map[string]any{"Index": "1", "a": "", "b": ""}},         // a ends past the values
		{2, 6, map[string]any{"Index": "1AAAAB", "a": "", "b": "BBBB"}}, // a ends before it starts
		{4, 0, map[string]any{"Index": "1", "a": "", "b": "1AAAABBBB"}}, // a ends before it starts
	} {
		d := bytes.Clone(data)
		d[at+c.off] = c.end
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := encodeCustomers(t, dir, 2)
		want := []map[string]any{c.want, {"Index": "2", "a": "CCCC", "b": "DDDD"}}
		for i, l := range lines {
			cm, _ := decode(t, l)["customer"].(map[string]any)
			if fmt.Sprint(cm) != fmt.Sprint(want[i]) {
				t.Fatalf("end %d at %d: row %d: got %v, want %v: %s", c.end, c.off, i+1, cm, want[i], l)
			}
		}
	}
}

// encodeCustomers runs one event for each customer 1 to n through a
// pipeline that copies whole rows from dir's customers table (opened
// without verification, so that a damaged table loads), and returns the
// output lines.
func encodeCustomers(t *testing.T, dir string, n int) []string {
	t.Helper()
	linkMMDB(t, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	p, err := New(testRules(nil), testOptions, set)
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{Format: Syslog}
	for i := 1; i <= n; i++ {
		b.Add([]byte(event(i, i, "10.0.0.1")), 0)
	}
	out := p.NewWorker(512).process(b, nil, time.Unix(0, 0))
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}
