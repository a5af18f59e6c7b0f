package mmdb

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestRecordCache: lookups through a cache give the values and matches of
// lookups without one, for addresses that repeat records, and a cache
// moved to another file or other fields answers nothing from before.
func TestRecordCache(t *testing.T) {
	city, err := Open(testfiles.CityMMDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer city.Close()
	geo, err := Open(testfiles.MaxMind(t, "test-data/GeoIP2-City-Test.mmdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer geo.Close()
	flat, _ := CompileFields("country_code", "city", "latitude")
	nested, _ := CompileFields("country.iso_code", "city.names.en", "location.latitude")
	var c RecordCache
	for round, tc := range []struct {
		r *Reader
		f *Fields
	}{{city, flat}, {geo, nested}, {city, nested}, {city, flat}, {geo, flat}, {geo, nested}} {
		ips := append(randomPublicIPv4(3000), testAddrs(tc.r, 500)...)
		nf := tc.f.Len()
		want := make([]Value, len(ips)*nf)
		wantMs := make([]Match, len(ips))
		werr := tc.r.LookupFieldsBatch(ips, tc.f, want, wantMs)
		hits := 0
		for pass := range 2 {
			got := make([]Value, len(ips)*nf)
			ms := make([]Match, len(ips))
			gerr := tc.r.LookupFieldsCached(ips, tc.f, got, ms, &c)
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("round %d pass %d: error %v, without cache %v", round, pass, gerr, werr)
			}
			if !reflect.DeepEqual(ms, wantMs) {
				t.Fatalf("round %d pass %d: matches differ", round, pass)
			}
			for i := range ips {
				if !reflect.DeepEqual(got[i*nf:(i+1)*nf], want[i*nf:(i+1)*nf]) {
					t.Fatalf("round %d pass %d, %s: %v, without cache %v", round, pass, ips[i], got[i*nf:(i+1)*nf], want[i*nf:(i+1)*nf])
				}
			}
		}
		for i := range c.offs {
			if c.offs[i] != 0 {
				hits++
			}
		}
		if hits == 0 {
			t.Fatalf("round %d: the cache holds nothing", round)
		}
	}
}

func TestRecordCacheHits(t *testing.T) {
	r, err := Open(testfiles.CityMMDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, _ := CompileFields("country_code", "city")
	ips := randomPublicIPv4(4096)
	out := make([]Value, len(ips)*f.Len())
	ms := make([]Match, len(ips))
	var c RecordCache
	_ = r.LookupFieldsCached(ips, f, out, ms, &c)
	// The record of an address just looked up is in the cache, as decoded.
	found := 0
	for _, ip := range ips[:256] {
		_ = r.LookupFieldsCached([]netip.Addr{ip}, f, out, ms, &c)
		if !ms[0].Found() {
			continue
		}
		found++
		v := make([]Value, f.Len())
		if !c.get(ms[0].offset, v) || !reflect.DeepEqual(v, out[:f.Len()]) {
			t.Fatalf("%s: record %d not cached as decoded", ip, ms[0].offset)
		}
	}
	if found == 0 {
		t.Fatal("no address found")
	}
	allocs := testing.AllocsPerRun(20, func() {
		_ = r.LookupFieldsCached(ips[:512], f, out, ms, &c)
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per batch", allocs)
	}
}
