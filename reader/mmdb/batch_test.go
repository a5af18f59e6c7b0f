package mmdb

import (
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// testAddrs returns addresses to probe r with: the first address of every
// network (up to a limit), random IPv4 and IPv6 addresses, IPv4-mapped
// IPv6 addresses and edge cases.
func testAddrs(r *Reader, n int) []netip.Addr {
	var ips []netip.Addr
	for res := range r.DB().Networks() {
		if res.Err() != nil || len(ips) >= n {
			break
		}
		ips = append(ips, res.Prefix().Addr())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range n {
		v := rng.Uint64()
		ips = append(ips, netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}))
		var a [16]byte
		for j := range a {
			a[j] = byte(rng.Uint32())
		}
		if v&1 == 0 {
			a[0] = 0x20 // mostly in 2000::/8, where the test files have data
		}
		ips = append(ips, netip.AddrFrom16(a))
		ips = append(ips, netip.AddrFrom16(netip.AddrFrom4([4]byte{byte(v), byte(v >> 8), 1, 2}).As16()))
	}
	for _, s := range []string{"0.0.0.0", "255.255.255.255", "::", "::1", "::1.1.1.1", "::ffff:1.2.3.4", "2001:218::1", "ffff::"} {
		ips = append(ips, netip.MustParseAddr(s))
	}
	return append(ips, netip.Addr{})
}

// TestLookupFieldsBatchMatchesSingle: the batch lookup gives the single
// lookup's values and matches, and both agree with maxminddb-golang, for
// every test file and the city file.
func TestLookupFieldsBatchMatchesSingle(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "test-data"), "*.mmdb"))
	files = append(files, testfiles.CityMMDB(t))
	f, err := CompileFields("city.names.en", "country.iso_code", "location.latitude", "subdivisions.-1.iso_code",
		"autonomous_system_number", "country_code", "city", "latitude", "ip", "utf8_stringX", "uint128", "array.0")
	if err != nil {
		t.Fatal(err)
	}
	nf := f.Len()
	opened := 0
	for _, file := range files {
		r, err := Open(file)
		if err != nil {
			continue
		}
		opened++
		ips := testAddrs(r, 3000)
		out := make([]Value, len(ips)*nf)
		ms := make([]Match, len(ips))
		berr := r.LookupFieldsBatch(ips, f, out, ms)
		one := make([]Value, nf)
		var firstErr error
		for i, ip := range ips {
			m, err := r.LookupFields(ip, f, one)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				if ms[i] != (Match{}) {
					t.Fatalf("%s %s: single error %v, batch match %+v", file, ip, err, ms[i])
				}
				continue
			}
			if ms[i] != m {
				t.Fatalf("%s %s: batch match %+v, single %+v", file, ip, ms[i], m)
			}
			if !reflect.DeepEqual(out[i*nf:(i+1)*nf], one) {
				t.Fatalf("%s %s: batch values %v, single %v", file, ip, out[i*nf:(i+1)*nf], one)
			}
			want := r.DB().Lookup(ip)
			if want.Err() != nil {
				t.Fatalf("%s %s: maxminddb error %v, ours none", file, ip, want.Err())
			}
			if m.Found() != want.Found() || m.Prefix() != want.Prefix() || (m.Found() && m.Offset() != want.Offset()) {
				t.Fatalf("%s %s: match %v %v %d, maxminddb %v %v %d", file, ip, m.Found(), m.Prefix(), m.Offset(),
					want.Found(), want.Prefix(), want.Offset())
			}
		}
		if (berr == nil) != (firstErr == nil) {
			t.Fatalf("%s: batch error %v, single %v", file, berr, firstErr)
		}
		r.Close()
	}
	if opened == 0 {
		t.Fatal("no test data")
	}
}

func TestLookupFieldsBatchZeroAlloc(t *testing.T) {
	r, err := Open(testfiles.CityMMDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, _ := CompileFields("country_code", "city", "latitude")
	ips := randomPublicIPv4(512)
	out := make([]Value, len(ips)*f.Len())
	ms := make([]Match, len(ips))
	allocs := testing.AllocsPerRun(20, func() {
		if err := r.LookupFieldsBatch(ips, f, out, ms); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per batch", allocs)
	}
}
