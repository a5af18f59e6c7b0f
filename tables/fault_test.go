package tables

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// faultRows is large enough that half of the table's file is many pages.
const faultRows = 20000

// lookupAll looks every key of a faultRows table up in the named table of
// the current snapshot, reading every row, under SetPanicOnFault; a fault
// is recovered and handed to set.Fault. It returns the rows found and the
// table Fault named ("" without a fault).
func lookupAll(t *testing.T, set *Set, name string) (found int, faulted string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		sn := set.Acquire()
		defer sn.Release()
		defer func() {
			if r := recover(); r != nil {
				tbl, ok := set.Fault(r)
				if !ok {
					t.Errorf("Fault did not recognise %v", r)
				}
				faulted = tbl
			}
		}()
		tb := sn.LUT(name)
		if tb == nil {
			return
		}
		sum := 0
		for k := range faultRows {
			if v, ok := tb.Lookup([]byte(strconv.Itoa(k))); ok {
				for _, b := range v.Values() {
					sum += int(b)
				}
				found++
			}
		}
		_ = sum
	}()
	<-done
	return found, faulted
}

// TestFaultDamagesTable truncates a mapped table file in place: the
// lookup that reads past the new end faults, Fault names the table, the
// version is reported damaged and no longer returned, and a good version
// renamed over it is published and found again.
func TestFaultDamagesTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "customers.lut")
	compileVersion(t, path, faultRows, 1)
	log, logs := newTestLogger(t)
	set, err := Open(dir, Options{NoWatch: true, DataVerify: DataVerifyNone, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if n, f := lookupAll(t, set, "customers"); n != faultRows || f != "" {
		t.Fatalf("before the truncation: %d rows found, fault %q", n, f)
	}
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, fi.Size()/2))
	n, f := lookupAll(t, set, "customers")
	if f != "customers" {
		t.Fatalf("after the truncation: %d rows found, fault %q, want a fault in customers", n, f)
	}
	// A value that is no fault is not taken for one.
	if _, ok := set.Fault(errors.New("other")); ok {
		t.Error("Fault took a plain error for a fault")
	}
	if set.Acquire().LUT("customers") != nil || set.Table("customers").LUT(set.Acquire()) != nil {
		t.Error("a damaged version is still returned")
	}
	if n, f := lookupAll(t, set, "customers"); n != 0 || f != "" {
		t.Errorf("lookups on the damaged table: %d rows found, fault %q", n, f)
	}
	st := set.Stats()
	if len(st.Tables) != 1 || !st.Tables[0].Damaged || !strings.Contains(st.Tables[0].DamageReason, "memory fault") {
		t.Errorf("tables: %+v", st.Tables)
	}
	if len(st.Faults) != 1 || st.Faults[0].Name != "customers" || st.Faults[0].Faults != 1 {
		t.Errorf("faults: %+v", st.Faults)
	}
	if c := strings.Count(logs.String(), "tables: table damaged"); c != 1 {
		t.Errorf("damage logged %d times, want 1:\n%s", c, logs)
	}
	// The truncated file itself is rejected; the generation stays.
	if err := set.Reload(); err == nil || set.Generation() != 1 {
		t.Errorf("Reload of the truncated file: %v, generation %d", err, set.Generation())
	}
	// A good version replaces the damaged one.
	compileVersion(t, filepath.Join(dir, ".v2"), faultRows, 2)
	must(t, os.Rename(filepath.Join(dir, ".v2"), path))
	must(t, set.Reload())
	sn := set.Acquire()
	if v, err := lookupVersion(sn, "customers", 7); err != nil || v != 2 {
		t.Errorf("after the new version: %d, %v", v, err)
	}
	sn.Release()
	if n, f := lookupAll(t, set, "customers"); n != faultRows || f != "" {
		t.Errorf("new version: %d rows found, fault %q", n, f)
	}
	if st := set.Stats(); st.Generation != 2 || st.Tables[0].Damaged || st.Faults[0].Faults != 1 {
		t.Errorf("after the new version: %+v", st)
	}
}

// TestInPlaceChangeDamages: the watcher sees a mapped file truncated in
// place and marks its version damaged before any lookup reads it.
func TestInPlaceChangeDamages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "customers.lut")
	compileVersion(t, path, faultRows, 1)
	log, _ := newTestLogger(t)
	set, err := Open(dir, Options{PollInterval: 20 * time.Millisecond, DataVerify: DataVerifyNone, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, fi.Size()/2))
	waitFor(t, 10*time.Second, "the damage", func() bool {
		st := set.Stats()
		return len(st.Tables) == 1 && st.Tables[0].Damaged
	})
	st := set.Stats()
	if !strings.Contains(st.Tables[0].DamageReason, "truncated in place") || st.Generation != 1 {
		t.Errorf("stats: %+v", st)
	}
	if n, f := lookupAll(t, set, "customers"); n != 0 || f != "" {
		t.Errorf("lookups on the damaged table: %d rows found, fault %q", n, f)
	}
	// Rewritten in place with a good version: published.
	compileVersion(t, filepath.Join(dir, ".v2"), faultRows, 2)
	b, err := os.ReadFile(filepath.Join(dir, ".v2"))
	must(t, err)
	must(t, os.WriteFile(path, b, 0o644))
	waitFor(t, 10*time.Second, "version 2", func() bool {
		sn := set.Acquire()
		defer sn.Release()
		v, err := lookupVersion(sn, "customers", 3)
		return err == nil && v == 2
	})
}
