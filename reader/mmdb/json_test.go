package mmdb

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// AppendRecordJSON must give the same JSON value as decoding the record
// with maxminddb-golang and marshalling it with encoding/json.
func TestAppendRecordJSON(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "test-data"), "*.mmdb"))
	files = append(files, testfiles.CityMMDB(t))
	rng := rand.New(rand.NewPCG(9, 9))
	for _, path := range files {
		r, err := Open(path)
		if err != nil {
			continue // broken test files are covered elsewhere
		}
		checked := 0
		for i := 0; i < 300; i++ {
			var ip netip.Addr
			if i%2 == 0 {
				ip = netip.AddrFrom4([4]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
			} else {
				var b [16]byte
				for j := range b {
					b[j] = byte(rng.IntN(256))
				}
				b[0] = 0x20
				ip = netip.AddrFrom16(b)
			}
			if i < 40 {
				// Addresses the test databases are known to hold.
				ip = netip.MustParseAddr([]string{"1.1.1.1", "81.2.69.160", "2001:218::1", "::1.1.1.1", "216.160.83.56", "89.160.20.112", "2.125.160.216", "67.43.156.0"}[i%8])
			}
			got, m, err := r.AppendRecordJSON(nil, ip)
			wm, rec, werr := r.LookupRecord(ip)
			if (err == nil) != (werr == nil) || m.Found() != wm.Found() {
				t.Fatalf("%s %s: AppendRecordJSON (%v, found %v) vs LookupRecord (%v, found %v)", path, ip, err, m.Found(), werr, wm.Found())
			}
			if !m.Found() {
				if len(got) != 0 {
					t.Fatalf("%s %s: not found but appended %q", path, ip, got)
				}
				continue
			}
			want, err := json.Marshal(rec)
			if err != nil {
				continue // a value encoding/json cannot write (e.g. a map with non-string keys)
			}
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatalf("%s %s: invalid JSON %q: %v", path, ip, got, err)
			}
			if err := json.Unmarshal(want, &b); err != nil {
				t.Fatalf("%s %s: encoding/json's own output %q: %v", path, ip, want, err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s %s:\n got %s\nwant %s", path, ip, got, want)
			}
			checked++
		}
		r.Close()
		if checked == 0 && filepath.Base(path) == "GeoIP2-City-Test.mmdb" {
			t.Fatalf("%s: no record checked", path)
		}
	}
}

func TestAppendRecordJSONAllocs(t *testing.T) {
	r, err := Open(testfiles.CityMMDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ip := netip.MustParseAddr("81.2.69.160")
	buf := make([]byte, 0, 64<<10)
	if a := testing.AllocsPerRun(100, func() { buf, _, _ = r.AppendRecordJSON(buf[:0], ip) }); a != 0 {
		t.Fatalf("%v allocations per lookup", a)
	}
}

func TestAppendUint128(t *testing.T) {
	if got := string(appendUint128(nil, 1, 0)); got != "18446744073709551616" {
		t.Fatal(got)
	}
	if got := string(appendUint128(nil, ^uint64(0), ^uint64(0))); got != "340282366920938463463374607431768211455" {
		t.Fatal(got)
	}
}
