package enrichd

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
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
	src, err := source.NewCSVReader(strings.NewReader(csv.String()), "rows.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"Index"}}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir, filepath.Join(dir, "out.json"))
	cfg.Rules[0].Columns = nil
	set, err := tables.Open(dir, tables.Options{NoWatch: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	p, err := NewPipeline(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	b := &batch{format: fmtSyslog}
	for i := 1; i <= len(want); i++ {
		b.add([]byte(event(i, i, "10.0.0.1")), 0)
	}
	out := p.newWorker(512).process(b, nil, time.Unix(0, 0))
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
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
