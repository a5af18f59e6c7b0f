package engine

import (
	"encoding/json"
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

// TestSuffixTable: a rule whose table is a suffix table is configured and
// run as one on an exact table: each event's name finds the row of its
// most specific listed suffix, a name below none takes the miss tag and
// defaults.
func TestSuffixTable(t *testing.T) {
	dir := t.TempDir()
	src, err := source.NewCSVReader(strings.NewReader("Index,Customer Id\n*.evil.com,EVIL\nbad.evil.com,BAD\nco.uk,UK\n"), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"Index"}, Match: "suffix"}); err != nil {
		t.Fatal(err)
	}
	linkMMDB(t, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	p, err := New(testRules(nil), testOptions, set)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, want string }{
		{"evil.com", "EVIL"}, {"A.B.Evil.COM", "EVIL"}, {"x.bad.evil.com.", "BAD"},
		{"notevil.com", "MISS"}, {"www.shop.co.uk", "UK"}, {"uk", "MISS"},
	}
	b := &Batch{Format: JSON}
	for _, c := range cases {
		b.Add(fmt.Appendf(nil, `{"cust":%q,"src":"10.0.0.1"}`, c.name), 0)
	}
	out := p.NewWorker(512).process(b, nil, time.Unix(0, 0))
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		var ev map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &ev); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, lines[i])
		}
		cust, _ := ev["customer"].(map[string]any)
		if got := fmt.Sprint(cust["Customer Id"]); got != c.want {
			t.Errorf("%s: Customer Id %q, want %q: %s", c.name, got, c.want, lines[i])
		}
	}
}
