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

// TestLiteralTables: a rule whose table is a wildcard or a pattern table
// is configured and run as one on an exact table: each event's field
// finds its best match (the most literal glob; the first pattern), one
// that matches none takes the miss tag and defaults.
func TestLiteralTables(t *testing.T) {
	for _, c := range []struct {
		kind, csv string
		cases     []struct{ key, want string }
	}{
		{"wildcard", "Index,Customer Id\nweb-*,WEB\nweb-db-*,WEBDB\n*.corp,CORP\n", []struct{ key, want string }{
			{"web-01", "WEB"}, {"web-db-01", "WEBDB"}, {"a.corp", "CORP"}, {"corp", "MISS"}, {"xweb-01", "MISS"},
		}},
		{"pattern", "Index,Customer Id\n(?i)googlebot,BOT\n^curl/\\d+,CURL\nbot,ANYBOT\n", []struct{ key, want string }{
			{"Mozilla/5.0 (compatible; Googlebot/2.1)", "BOT"}, {"curl/8.5", "CURL"}, {"xcurl/8", "MISS"}, {"robot", "ANYBOT"}, {"Mozilla/5.0", "MISS"},
		}},
	} {
		dir := t.TempDir()
		src, err := source.NewCSVReader(strings.NewReader(c.csv), "t.csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.File(src, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"Index"}, Match: c.kind}); err != nil {
			t.Fatal(err)
		}
		linkMMDB(t, dir)
		set, err := tables.Open(dir, tables.Options{NoWatch: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(testRules(nil), testOptions, set)
		if err != nil {
			t.Fatal(err)
		}
		b := &Batch{Format: JSON}
		for _, e := range c.cases {
			b.Add(fmt.Appendf(nil, `{"cust":%q,"src":"10.0.0.1"}`, e.key), 0)
		}
		out := p.NewWorker(512).process(b, nil, time.Unix(0, 0))
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != len(c.cases) {
			t.Fatalf("%s: %d lines for %d events:\n%s", c.kind, len(lines), len(c.cases), out)
		}
		for i, e := range c.cases {
			var ev map[string]any
			if err := json.Unmarshal([]byte(lines[i]), &ev); err != nil {
				t.Fatalf("line %d: %v: %s", i, err, lines[i])
			}
			cust, _ := ev["customer"].(map[string]any)
			if got := fmt.Sprint(cust["Customer Id"]); got != e.want {
				t.Errorf("%s %q: Customer Id %q, want %q: %s", c.kind, e.key, got, e.want, lines[i])
			}
		}
		set.Close()
	}
}
