package tablebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/internal/sample"
	"github.com/lutkit/lutkit/tables"
)

// buildCustomersVersion writes version v of a 3000-row customers table
// (row v's e-mail changed) and builds it into out with deltas.
func buildCustomersVersion(t *testing.T, src, out string, v, chain int) *tables.ManifestTable {
	t.Helper()
	return buildCustomersWith(t, src, out, v, "", Options{Jobs: 1, Delta: true, DeltaChain: chain, Prune: true})
}

// buildCustomersWith builds version v with opts, the table's entry in
// tables.yaml carrying the settings extra ("" for none).
func buildCustomersWith(t *testing.T, src, out string, v int, extra string, opts Options) *tables.ManifestTable {
	t.Helper()
	f, err := os.Create(filepath.Join(src, "c.csv"))
	if err != nil {
		t.Fatal(err)
	}
	err = sample.WriteCustomersEdited(f, 3000, 1, func(i int) ([]string, bool) {
		if i != v*10 {
			return nil, false
		}
		c := sample.NewCustomer(1, i).Fields()
		c[9] = fmt.Sprintf("version%d.%s", v, c[9])
		return c, true
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfgPath := filepath.Join(src, "tables.yaml")
	if err := os.WriteFile(cfgPath, []byte("version: 1\ntables:\n  - {name: c, sources: [c.csv], key: Customer Id"+extra+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(context.Background(), cfg, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r.Manifest.Table("c")
}

// TestBuildDeltaChain: each rebuilt version carries a delta from the one
// before, up to the chain limit; then a version is full only and the
// chain starts again. Pruning keeps the deltas the manifests name, lut
// verify checks them, and publish uploads them.
func TestBuildDeltaChain(t *testing.T) {
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "dist")
	var prev *tables.ManifestTable
	wantChain := []int{0, 1, 2, 0, 1}
	for v, want := range wantChain {
		e := buildCustomersVersion(t, src, out, v, 2)
		got := 0
		if e.Delta != nil {
			got = e.Delta.Chain
			if e.Delta.BaseSHA256 != prev.SHA256 || e.Delta.BaseSize != prev.Size || e.Delta.File != tables.DeltaName("c", e.Delta.SHA256) {
				t.Fatalf("version %d: delta %+v, previous artifact %s", v, e.Delta, prev.SHA256)
			}
			sum, size, err := fsutil.FileSHA256(filepath.Join(out, e.Delta.File))
			if err != nil || sum != e.Delta.SHA256 || size != e.Delta.Size || size*10 > e.Size {
				t.Fatalf("version %d: delta file %s: %v %s %d (artifact %d bytes)", v, e.Delta.File, err, sum, size, e.Size)
			}
		}
		if got != want {
			t.Fatalf("version %d: chain %d, want %d", v, got, want)
		}
		if _, err := tables.VerifyDir(out); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		prev = e
	}
	// The delta of the last version is there; the first version's
	// delta-less artifact and the deltas of versions 1 and 2 are pruned.
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, e := range ents {
		if filepath.Ext(e.Name()) == tables.DeltaExt {
			deltas++
			if e.Name() != prev.Delta.File {
				t.Errorf("%s not pruned", e.Name())
			}
		}
	}
	if deltas != 1 {
		t.Errorf("%d deltas in %s, want 1", deltas, out)
	}
	// A damaged delta fails lut verify.
	p := filepath.Join(out, prev.Delta.File)
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tables.VerifyDir(out); err == nil {
		t.Fatal("VerifyDir accepted a damaged delta")
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	res, err := Publish(context.Background(), out, dest, PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploaded) != 2 || res.Uploaded[1] != prev.Delta.File {
		t.Fatalf("uploaded %v", res.Uploaded)
	}
	if sum, _, err := fsutil.FileSHA256(filepath.Join(dest, prev.Delta.File)); err != nil || sum != prev.Delta.SHA256 {
		t.Fatalf("published delta: %v %s", err, sum)
	}
}

// TestTableDeltaSetting: delta and delta_chain in a table's entry publish
// its versions with deltas without --delta, with the table's own chain;
// they are refused on an .mmdb table or with a chain below 1.
func TestTableDeltaSetting(t *testing.T) {
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "dist")
	opts := Options{Jobs: 1, Prune: true}
	if e := buildCustomersWith(t, src, out, 0, "", opts); e.Delta != nil {
		t.Fatalf("a delta without delta: %+v", e.Delta)
	}
	for v, want := range []int{1, 0, 1, 0} {
		e := buildCustomersWith(t, src, out, v+1, ", delta: true, delta_chain: 1", opts)
		got := 0
		if e.Delta != nil {
			got = e.Delta.Chain
		}
		if got != want {
			t.Fatalf("version %d: chain %d, want %d", v+1, got, want)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"  - {name: g, kind: mmdb, sources: [r.csv], delta: true}\n", "deltas are for .lut tables"},
		{"  - {name: c, sources: [c.csv], key: k, delta_chain: 0}\n", "delta_chain: must be at least 1"},
	} {
		_, err := ParseConfig("t.yaml", []byte("version: 1\ntables:\n"+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.yaml:3:") {
			t.Errorf("%q: %v, want an error at t.yaml:3 with %q", tc.yaml, err, tc.want)
		}
	}
}
