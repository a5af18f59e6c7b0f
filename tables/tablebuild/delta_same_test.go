package tablebuild

import (
	"context"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// TestBuildSameBytesKeepsDelta: a table rebuilt to the bytes of its
// previous version, by --force or by options that change nothing in the
// table, keeps that version's build time and delta, so that nodes fetch
// nothing again; the next version that differs gets a delta from it, and
// lut verify and lut publish accept every build.
func TestBuildSameBytesKeepsDelta(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	opts := Options{Jobs: 1, Delta: true, Prune: true}
	buildCustomersWith(t, src, out, 0, "", opts)
	v1 := buildCustomersWith(t, src, out, 1, "", opts)
	if v1.Delta == nil {
		t.Fatal("version 1 has no delta")
	}
	// A rebuild in a later second would record a later build time.
	time.Sleep(time.Until(v1.BuildTime.Add(time.Second)))
	check := func(what string, e *tables.ManifestTable) {
		t.Helper()
		if e.SHA256 != v1.SHA256 || e.File != v1.File || !e.BuildTime.Equal(v1.BuildTime) || e.Delta == nil || *e.Delta != *v1.Delta {
			t.Fatalf("%s: %s built %v delta %+v, want %s built %v delta %+v", what, e.File, e.BuildTime, e.Delta, v1.File, v1.BuildTime, *v1.Delta)
		}
		if _, err := tables.VerifyDir(out); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := Publish(context.Background(), out, t.TempDir(), PublishOptions{}); err != nil {
			t.Fatalf("%s: publish: %v", what, err)
		}
	}
	forced := opts
	forced.Force = true
	check("forced", buildCustomersWith(t, src, out, 1, "", forced))
	// Options that change the options digest but not the table: as a lut
	// upgrade whose tables come out the same.
	e := buildCustomersWith(t, src, out, 1, ", skip_bad_rows: true", opts)
	if e.OptionsDigest == v1.OptionsDigest {
		t.Fatal("skip_bad_rows did not change the options digest")
	}
	check("options changed", e)
	// The next version that differs continues the chain.
	v2 := buildCustomersWith(t, src, out, 2, ", skip_bad_rows: true", forced)
	if v2.Delta == nil || v2.Delta.BaseSHA256 != v1.SHA256 || v2.Delta.Chain != v1.Delta.Chain+1 {
		t.Fatalf("version 2: delta %+v, want one from %s, chain %d", v2.Delta, v1.SHA256, v1.Delta.Chain+1)
	}
	if _, err := tables.VerifyDir(out); err != nil {
		t.Fatal(err)
	}
}
