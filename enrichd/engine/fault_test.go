package engine

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/tables"
)

// TestTruncatedTableMisses truncates each table file of a live set in
// place, under its mapping, between two batches: the worker survives the
// fault, writes every event of the batch once, the events after the
// fault miss in the damaged table (tagged), the fault is counted by the
// set, and the rule's counters count each event once.
func TestTruncatedTableMisses(t *testing.T) {
	for _, c := range []struct{ table, file, rule, tag string }{
		{"customers", "customers.lut", "customer", "customer_miss"},
		{"geo", "geo.mmdb", "geo", ""},
	} {
		t.Run(c.table, func(t *testing.T) {
			const rows, n = 20000, 2000
			dir := t.TempDir()
			buildCustomers(t, filepath.Join(dir, "customers.lut"), rows, 1)
			copyFile(t, testfiles.CityMMDB(t), filepath.Join(dir, "geo.mmdb"))
			set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyNone, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			p, err := New(testRules(nil), testOptions, set)
			if err != nil {
				t.Fatal(err)
			}
			batch := func(from int) *Batch {
				b := &Batch{Format: Syslog}
				for i := from; i < from+n; i++ {
					src := fmt.Sprintf("%d.%d.%d.%d", 1+i*7%223, i*13%256, i*29%256, 1+i%250)
					b.Add([]byte(event(i, 1+(i*7919)%rows, src)), 0)
				}
				return b
			}
			w := p.NewWorker(512)
			lines := func(out []byte) []string { return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") }
			for _, l := range lines(w.process(batch(0), nil, time.Now())) {
				if m := decode(t, l); slices.Contains(tagsOf(m), "_table_missing") {
					t.Fatalf("before the truncation: %s", l)
				}
			}
			path := filepath.Join(dir, c.file)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			out := lines(w.process(batch(n), nil, time.Now()))
			if len(out) != n {
				t.Fatalf("%d lines after the truncation, want %d", len(out), n)
			}
			seen := map[string]bool{}
			for i, l := range out {
				m := decode(t, l)
				msg, _ := get(m, "message").(string)
				seen[msg] = true
				tags := tagsOf(m)
				// The first chunk faulted and was done again: every
				// event after the fault misses in the damaged table.
				if !slices.Contains(tags, "_table_missing") || c.tag != "" && !slices.Contains(tags, c.tag) {
					t.Fatalf("line %d after the fault is not tagged a miss: %s", i, l)
				}
			}
			if len(seen) != n {
				t.Errorf("%d distinct events of %d", len(seen), n)
			}
			st := set.Stats()
			if len(st.Faults) != 1 || st.Faults[0].Name != c.table || st.Faults[0].Faults == 0 {
				t.Errorf("set faults: %+v", st.Faults)
			}
			for _, ts := range st.Tables {
				if ts.Damaged != (ts.Name == c.table) {
					t.Errorf("table %s: damaged %v", ts.Name, ts.Damaged)
				}
			}
			for _, r := range p.Stats() {
				if r.Hits+r.Misses != 2*n {
					t.Errorf("rule %s: %d hits + %d misses, want %d events", r.Name, r.Hits, r.Misses, 2*n)
				}
				want := uint64(0)
				if r.Name == c.rule {
					want = n
				}
				if r.NoTable != want {
					t.Errorf("rule %s: %d events without the table, want %d", r.Name, r.NoTable, want)
				}
			}
		})
	}
}

// tagsOf returns an event's tags.
func tagsOf(m map[string]any) []string {
	var out []string
	if ts, ok := m["tags"].([]any); ok {
		for _, t := range ts {
			s, _ := t.(string)
			out = append(out, s)
		}
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
