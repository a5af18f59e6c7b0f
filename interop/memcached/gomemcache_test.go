package memcached

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
)

// TestGomemcache is the gomemcache row: github.com/bradfitz/gomemcache
// (the version in go.mod) reads from enrichd what it reads from a real
// memcached holding the same items, and its writes get the read-only
// refusal without spoiling the reads that follow.
func TestGomemcache(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	keys := []string{"customers:42", "customers:7", "customers:9000"}
	mirror(t, ours, real, keys...)
	for _, addr := range []string{ours, real} {
		if err := memcache.New(addr).Ping(); err != nil {
			t.Errorf("ping %s: %v", addr, err)
		}
	}
	oc, rc := memcache.New(ours), memcache.New(real)
	for _, k := range append(keys, "customers:nope") {
		oi, oerr := oc.Get(k)
		ri, rerr := rc.Get(k)
		if !errors.Is(oerr, rerr) || (oerr == nil) != (rerr == nil) {
			t.Fatalf("get %s: enrichd %v, memcached %v", k, oerr, rerr)
		}
		if oerr == nil && (!bytes.Equal(oi.Value, ri.Value) || oi.Flags != ri.Flags || oi.Key != ri.Key) {
			t.Errorf("get %s: enrichd %+v, memcached %+v", k, oi, ri)
		}
	}
	om, err := oc.GetMulti(append(keys, "customers:nope"))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := rc.GetMulti(append(keys, "customers:nope"))
	if err != nil {
		t.Fatal(err)
	}
	if len(om) != len(keys) || len(rm) != len(keys) {
		t.Errorf("GetMulti: %d and %d items, want %d", len(om), len(rm), len(keys))
	}
	for k, ri := range rm {
		if oi := om[k]; oi == nil || !bytes.Equal(oi.Value, ri.Value) {
			t.Errorf("GetMulti %s: enrichd %v", k, oi)
		}
	}
	// Writes are refused with the server's error line.
	item := &memcache.Item{Key: "customers:42", Value: []byte("x")}
	for name, write := range map[string]func() error{
		"Set":         func() error { return oc.Set(item) },
		"Add":         func() error { return oc.Add(item) },
		"Replace":     func() error { return oc.Replace(item) },
		"Append":      func() error { return oc.Append(item) },
		"Prepend":     func() error { return oc.Prepend(item) },
		"Delete":      func() error { return oc.Delete("customers:42") },
		"Increment":   func() error { _, err := oc.Increment("customers:42", 1); return err },
		"Decrement":   func() error { _, err := oc.Decrement("customers:42", 1); return err },
		"Touch":       func() error { return oc.Touch("customers:42", 10) },
		"GetAndTouch": func() error { _, err := oc.GetAndTouch("customers:42", 10); return err },
		"FlushAll":    func() error { return oc.FlushAll() },
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: %v, want the read-only refusal", name, err)
		}
		if it, err := oc.Get("customers:7"); err != nil || !bytes.Equal(it.Value, rm["customers:7"].Value) {
			t.Errorf("get after %s: %v %v", name, it, err)
		}
	}
}
