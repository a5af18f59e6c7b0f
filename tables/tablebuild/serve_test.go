package tablebuild

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// TestBuildAndServeExamples builds the repository's examples and serves
// the result: one .lut and one .mmdb table at least.
func TestBuildAndServeExamples(t *testing.T) {
	cfg, err := LoadConfig("../../examples/tables.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Build(context.Background(), cfg, out, Options{}); err != nil {
		t.Fatal(err)
	}
	set, err := tables.Open(filepath.Join(out, tables.ManifestName), tables.Options{NoNotify: true, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	snap := set.Acquire()
	defer snap.Release()
	c := snap.LUT("customers")
	if c == nil {
		t.Fatal("no customers table")
	}
	if v, ok := c.Lookup([]byte("2")); !ok || string(v.Col(c.ColumnIndex("Last Name"))) != "Lozano" {
		t.Errorf("customers 2: %v %q", ok, v.Col(c.ColumnIndex("Last Name")))
	}
	if snap.MMDB("sites") == nil {
		t.Fatal("no sites table")
	}
	pfx, rec, found, err := set.Table("sites").LookupRecord(netip.MustParseAddr("10.0.3.7"))
	if err != nil || !found {
		t.Fatalf("sites 10.0.3.7: %v %v", found, err)
	}
	m, _ := rec.(map[string]any)
	if m["site"] != "par1" || m["threat"] == nil {
		t.Errorf("sites 10.0.3.7 (%s): %v", pfx, rec)
	}
	if st := set.Stats(); st.Mode != "manifest" || len(st.Tables) != 3 {
		t.Errorf("stats %+v", st)
	}
}
