package mmdb

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2/mmdbdata"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// probeAll looks many addresses up in every way the package offers, to
// show that a bad file gives errors, not crashes.
func probeAll(r *Reader) {
	f, _ := CompileFields("city.names.en", "subdivisions.-1.iso_code", "location.latitude", "a.0.b")
	out := make([]Value, f.Len())
	for _, s := range []string{"1.1.1.1", "81.2.69.160", "::1.1.1.1", "2001:218::1", "::", "255.255.255.255", "::ffff:1.2.3.4"} {
		ip := netip.MustParseAddr(s)
		m, _ := r.LookupFields(ip, f, out)
		_, _, _ = r.LookupRecord(ip)
		_, _, _ = r.AppendRecordJSON(nil, ip)
		if m.Found() {
			_, _ = r.RecordAt(m.Offset())
		}
	}
	// Network iteration walks the whole tree: a corrupt tree can make that
	// path count explode, so it is only done on verified files.
	if r.Verify() != nil {
		return
	}
	n := 0
	for res := range r.DB().Networks() {
		if res.Err() != nil || n > 1000 {
			break
		}
		_, _ = r.RecordAt(res.Offset())
		n++
	}
	_, _ = r.MetadataHasPointers()
	_, _ = r.Findings()
}

func TestBadDataRejected(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "bad-data"), "*/*.mmdb"))
	if len(files) == 0 {
		t.Fatal("no bad-data files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := Open(f, WithVerify()); err == nil {
				t.Fatal("Open with verification accepted a corrupt file")
			}
			r, err := Open(f)
			if err != nil {
				return
			}
			defer r.Close()
			probeAll(r)
			if err := r.Verify(); err == nil {
				t.Fatal("Verify accepted a corrupt file")
			}
		})
	}
}

// TestLookupFieldsMatchesMaxminddb compares LookupFields with
// maxminddb-golang's DecodePath on MaxMind's test files.
func TestLookupFieldsMatchesMaxminddb(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "test-data"), "GeoIP2-*.mmdb"))
	files = append(files, testfiles.MaxMind(t, "test-data/GeoLite2-ASN-Test.mmdb"))
	paths := [][]any{
		{"city", "names", "en"}, {"country", "iso_code"}, {"location", "latitude"},
		{"location", "metro_code"}, {"subdivisions", 0, "iso_code"}, {"subdivisions", -1, "names", "en"},
		{"country", "is_in_european_union"}, {"autonomous_system_number"}, {"city", "geoname_id"},
	}
	f, err := CompileFields("city.names.en", "country.iso_code", "location.latitude", "location.metro_code",
		"subdivisions.0.iso_code", "subdivisions.-1.names.en", "country.is_in_european_union",
		"autonomous_system_number", "city.geoname_id")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Value, f.Len())
	checked := 0
	for _, file := range files {
		if filepath.Base(file) == "GeoIP2-City-Test-Broken-Double-Format.mmdb" {
			continue // its bad double is reported as an error, tested below
		}
		r, err := Open(file)
		if err != nil {
			continue
		}
		for res := range r.DB().Networks() {
			ip := res.Prefix().Addr()
			m, err := r.LookupFields(ip, f, out)
			if err != nil || !m.Found() {
				t.Fatalf("%s %s: %v found=%v", file, ip, err, m.Found())
			}
			want := r.DB().Lookup(ip)
			for i, p := range paths {
				var v any
				if err := want.DecodePath(&v, p...); err != nil {
					t.Fatal(err)
				}
				var got any
				if out[i].Found() {
					switch out[i].Kind() {
					case KindString:
						got = out[i].String()
					case KindDouble:
						got = out[i].Float()
					case KindBool:
						got = out[i].Bool()
					default:
						got = out[i].Uint()
					}
				}
				if !reflect.DeepEqual(got, v) {
					t.Fatalf("%s %s %v: got %#v, want %#v", filepath.Base(file), ip, p, got, v)
				}
			}
			checked++
		}
		r.Close()
	}
	if checked == 0 {
		t.Fatal("no test data")
	}
	t.Logf("%d networks compared", checked)
}

func randomPublicIPv4(n int) []netip.Addr {
	rng := rand.New(rand.NewPCG(1, 2))
	var ips []netip.Addr
	for len(ips) < n {
		v := rng.Uint32()
		ip := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if ip.IsPrivate() || ip.IsLoopback() || ip.IsMulticast() || ip.IsUnspecified() ||
			ip.IsLinkLocalUnicast() || v>>24 == 0 || v>>24 >= 224 || v>>22 == 100<<2|1 {
			continue
		}
		ips = append(ips, ip)
	}
	return ips
}

func TestLookupFieldsZeroAlloc(t *testing.T) {
	r, err := Open(testfiles.CityMMDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, _ := CompileFields("country_code", "city", "latitude")
	out := make([]Value, 3)
	ips := randomPublicIPv4(1000)
	found := 0
	for _, ip := range ips {
		m, err := r.LookupFields(ip, f, out)
		if err != nil {
			t.Fatal(err)
		}
		if m.Found() {
			found++
			var want struct {
				CC   string  `maxminddb:"country_code"`
				City string  `maxminddb:"city"`
				Lat  float64 `maxminddb:"latitude"`
			}
			if err := r.DB().Lookup(ip).Decode(&want); err != nil {
				t.Fatal(err)
			}
			if out[0].String() != want.CC || out[1].String() != want.City || out[2].Float() != want.Lat {
				t.Fatalf("%s: got %v %v %v, want %+v", ip, out[0], out[1], out[2], want)
			}
		}
	}
	if found < len(ips)/2 {
		t.Fatalf("only %d of %d found", found, len(ips))
	}
	i := 0
	allocs := testing.AllocsPerRun(5000, func() {
		_, _ = r.LookupFields(ips[i%len(ips)], f, out)
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per lookup", allocs)
	}
}

func TestClosedAndOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing.mmdb")); err == nil {
		t.Fatal("missing file opened")
	}
	empty := filepath.Join(t.TempDir(), "empty.mmdb")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); err == nil {
		t.Fatal("empty file opened")
	}
	r, err := Open(testfiles.MaxMind(t, "test-data/GeoIP2-City-Test.mmdb"), WithVerify())
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	f, _ := CompileFields("city")
	if _, err := r.LookupFields(netip.MustParseAddr("1.1.1.1"), f, make([]Value, 1)); err == nil {
		t.Fatal("lookup after Close succeeded")
	}
	if _, err := CompileFields("a..b"); err == nil {
		t.Fatal("empty segment accepted")
	}
}

func FuzzOpenMMDB(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(f, "."), "*/*.mmdb"))
	more, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(f, "bad-data"), "*/*.mmdb"))
	for _, s := range append(seeds, more...) {
		if b, err := os.ReadFile(s); err == nil && len(b) < 1<<14 {
			f.Add(b)
		}
	}
	f.Add([]byte("not an mmdb file"))
	f.Add(append(make([]byte, 64), metadataMarker...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := OpenBytes(data)
		if err != nil {
			return
		}
		probeAll(r)
		_, _ = ElasticsearchDatabaseType(data, false)
		_, _ = ElasticsearchDatabaseType(data, true)
		r.Close()
	})
}

// city3 is the fastest decoding maxminddb-golang offers for three fields:
// a hand-written cursor unmarshaler (what maxminddb-gen generates).
type city3 struct {
	cc, city string
	lat      float64
}

func (c *city3) UnmarshalMaxMindDBCursor(cur mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	mr, err := cur.MapReader()
	if err != nil {
		return mmdbdata.Cursor{}, err
	}
	next := mr.First()
	for range mr.Len() {
		key, vc, err := next.ReadMapKey()
		if err != nil {
			return mmdbdata.Cursor{}, err
		}
		switch string(key) {
		case "country_code":
			c.cc, next, err = vc.ReadString()
		case "city":
			c.city, next, err = vc.ReadString()
		case "latitude":
			c.lat, next, err = vc.ReadFloat64()
		default:
			next, err = vc.Skip()
		}
		if err != nil {
			return mmdbdata.Cursor{}, err
		}
	}
	return mr.End(next)
}

// BenchmarkCityLookup3Fields: random public IPv4 addresses against the
// GeoLite2-based city file, decoding country code, city and latitude.
func BenchmarkCityLookup3Fields(b *testing.B) {
	r, err := Open(testfiles.CityMMDB(b))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	db, err := maxminddb.Open(testfiles.CityMMDB(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ips := randomPublicIPv4(1 << 16)
	mask := len(ips) - 1

	b.Run("lutkit-LookupFields", func(b *testing.B) {
		f, _ := CompileFields("country_code", "city", "latitude")
		out := make([]Value, 3)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, _ = r.LookupFields(ips[i&mask], f, out)
			i++
		}
	})
	b.Run("maxminddb-CursorUnmarshaler", func(b *testing.B) {
		var c city3
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = db.Lookup(ips[i&mask]).Decode(&c)
			i++
		}
	})
	b.Run("maxminddb-StructDecode", func(b *testing.B) {
		var c struct {
			CC   string  `maxminddb:"country_code"`
			City string  `maxminddb:"city"`
			Lat  float64 `maxminddb:"latitude"`
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = db.Lookup(ips[i&mask]).Decode(&c)
			i++
		}
	})
	b.Run("maxminddb-DecodePath", func(b *testing.B) {
		var cc, city string
		var lat float64
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			res := db.Lookup(ips[i&mask])
			_ = res.DecodePath(&cc, "country_code")
			_ = res.DecodePath(&city, "city")
			_ = res.DecodePath(&lat, "latitude")
			i++
		}
	})
}

// BenchmarkCityLookup3FieldsBatch: as BenchmarkCityLookup3Fields, with
// LookupFieldsBatch over batches of 512 addresses; ns/op is per address.
func BenchmarkCityLookup3FieldsBatch(b *testing.B) {
	r, err := Open(testfiles.CityMMDB(b))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ips := randomPublicIPv4(1 << 16)
	f, _ := CompileFields("country_code", "city", "latitude")
	const n = 512
	out := make([]Value, n*f.Len())
	ms := make([]Match, n)
	b.Run("lutkit-LookupFieldsBatch", func(b *testing.B) {
		b.ReportAllocs()
		done := 0
		for done < b.N {
			k := min(n, b.N-done)
			off := done % (len(ips) - n)
			_ = r.LookupFieldsBatch(ips[off:off+k], f, out, ms)
			done += k
		}
	})
	// With a RecordCache: records shared by many networks are decoded once.
	b.Run("lutkit-LookupFieldsCached", func(b *testing.B) {
		var c RecordCache
		b.ReportAllocs()
		done := 0
		for done < b.N {
			k := min(n, b.N-done)
			off := done % (len(ips) - n)
			_ = r.LookupFieldsCached(ips[off:off+k], f, out, ms, &c)
			done += k
		}
	})
}
