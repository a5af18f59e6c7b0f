package iptable

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oschwald/geoip2-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/lutkit/lutkit/compile/source"
)

// decodeCity decodes a record into geoip2-golang's City type. (Its own
// Reader accepts only MaxMind's database type names, so the record is
// decoded through maxminddb-golang, as geoip2-golang does internally.)
func decodeCity(t *testing.T, path, ip string) *geoip2.City {
	t.Helper()
	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c geoip2.City
	if err := db.Lookup(netip.MustParseAddr(ip)).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func lookupAny(t *testing.T, path, ip string) (map[string]any, netip.Prefix) {
	t.Helper()
	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res := db.Lookup(netip.MustParseAddr(ip))
	if !res.Found() {
		return nil, res.Prefix()
	}
	var m map[string]any
	if err := res.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m, res.Prefix()
}

func get(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// TestLayering: base MMDB, then internal networks, then an IoC list, with
// overlaps in every direction.
func TestLayering(t *testing.T) {
	dir := t.TempDir()
	// Base: a city file from ranges (wide 10/8, narrow 10.20.3.0/24,
	// 192.0.2.0/24) carrying geo data.
	baseCSV := write(t, dir, "geo.csv", `start,end,cc,name,lat,lon
10.0.0.0,10.255.255.255,DE,Berlin,52.52,13.405
10.20.3.0,10.20.3.255,FR,Paris,48.85,2.35
192.0.2.0,192.0.2.255,US,Boston,42.36,-71.06
2001:db8::,2001:db8::ffff,NL,Amsterdam,52.37,4.89
`)
	base := filepath.Join(dir, "geo.mmdb")
	geoFields := []Field{
		{Path: "country.iso_code", Column: "cc"}, {Path: "city.names.en", Column: "name"},
		{Path: "location.latitude", Column: "lat"}, {Path: "location.longitude", Column: "lon"},
	}
	if _, err := Compile(base, Options{Profile: ProfileCity, BuildEpoch: 1}, []Source{{
		Kind: CSVRanges, Path: baseCSV, StartColumn: "start", EndColumn: "end", Fields: geoFields,
	}}); err != nil {
		t.Fatal(err)
	}
	// Internal sites: 10.20.0.0/16 (inside base 10/8, containing base
	// 10.20.3.0/24), 192.0.2.128/25 (inside base /24), 172.16.0.0/12 (no
	// base), 2001:db8::/120 (inside base v6 range), and a /32 inside the /16.
	sites := write(t, dir, "sites.csv", `cidr,site,owner
10.20.0.0/16,HQ,netops
10.20.9.9,HQ-lab,lab
192.0.2.128/25,DC-East,dc
172.16.0.0/12,VPN,security
2001:db8::/120,HQ-v6,netops
`)
	// IoCs: inside a site (10.20.5.5), containing a site (192.0.2.0/24 ⊃
	// 192.0.2.128/25), in base only (10.99.0.1), in nothing (198.51.100.7),
	// and a range.
	iocs := write(t, dir, "iocs.txt", `# feodo sample
10.20.5.5
192.0.2.0/24 ; whole block
10.99.0.1   # base only
198.51.100.7
172.16.0.10-172.16.0.11
`)
	out := filepath.Join(dir, "assets.mmdb")
	st, err := Compile(out, Options{Profile: ProfileCity, DatabaseType: "Acme-Internal-City", BuildEpoch: 1}, []Source{
		{Kind: Base, Path: base},
		{Kind: CSVNetworks, Path: sites, NetworkColumn: "cidr", Merge: MergeDeep,
			Fields: []Field{{Path: "city.names.en", Column: "site"}, {Path: "owner", Column: "owner"}}},
		{Kind: List, Path: iocs, Merge: MergeDeep, Set: []Constant{
			{Path: "threat.ioc", Value: "true"}, {Path: "threat.list", Value: "feodo"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.DefaultedLocations == 0 {
		t.Error("expected records without location to get the default (172.16/12, 198.51.100.7)")
	}
	type want struct {
		ip, prefix              string
		city, cc, owner, threat any
		lat                     any
	}
	cases := []want{
		// base only (wide base network)
		{"10.1.2.3", "10.0.0.0/12", "Berlin", "DE", nil, nil, 52.52},
		// site inside base: site name, base country kept (deep merge)
		{"10.20.1.1", "10.20.0.0/23", "HQ", "DE", "netops", nil, 52.52},
		// site containing a narrower base network: the later layer wins
		{"10.20.3.4", "10.20.3.0/24", "HQ", "FR", "netops", nil, 48.85},
		// more specific site row inside the site /16
		{"10.20.9.9", "10.20.9.9/32", "HQ-lab", "DE", "lab", nil, 52.52},
		// IoC inside a site inside base
		{"10.20.5.5", "10.20.5.5/32", "HQ", "DE", "netops", true, 52.52},
		// IoC in base only
		{"10.99.0.1", "10.99.0.1/32", "Berlin", "DE", nil, true, 52.52},
		// IoC /24 containing a site /25 and equal to a base /24
		{"192.0.2.200", "192.0.2.128/25", "DC-East", "US", "dc", true, 42.36},
		{"192.0.2.5", "192.0.2.0/25", "Boston", "US", nil, true, 42.36},
		// site without base: default location
		{"172.17.0.1", "172.17.0.0/16", "VPN", nil, "security", nil, 0.0},
		// IoC range inside a site without base
		{"172.16.0.11", "172.16.0.10/31", "VPN", nil, "security", true, 0.0},
		// IoC in nothing else
		{"198.51.100.7", "198.51.100.7/32", nil, nil, nil, true, 0.0},
		// IPv6: site inside base range
		{"2001:db8::10", "2001:db8::/120", "HQ-v6", "NL", "netops", nil, 52.37},
		{"2001:db8::8000", "2001:db8::8000/113", "Amsterdam", "NL", nil, nil, 52.37},
	}
	for _, c := range cases {
		m, p := lookupAny(t, out, c.ip)
		if m == nil {
			t.Errorf("%s: not found", c.ip)
			continue
		}
		if p.String() != c.prefix {
			t.Errorf("%s: network %s, want %s", c.ip, p, c.prefix)
		}
		for path, w := range map[string]any{"city.names.en": c.city, "country.iso_code": c.cc,
			"x_internal.owner": c.owner, "x_internal.threat.ioc": c.threat, "location.latitude": c.lat} {
			if got := get(m, path); got != w {
				t.Errorf("%s: %s = %v, want %v (record %v)", c.ip, path, got, w, m)
			}
		}
	}
	if m, _ := lookupAny(t, out, "8.8.8.8"); m != nil {
		t.Errorf("8.8.8.8: found %v", m)
	}

	// Replace instead of deep merge: the site record drops base fields.
	out2 := filepath.Join(dir, "replace.mmdb")
	if _, err := Compile(out2, Options{Profile: ProfileCity, BuildEpoch: 1}, []Source{
		{Kind: Base, Path: base},
		{Kind: CSVNetworks, Path: sites, NetworkColumn: "cidr", Merge: Replace,
			Fields: []Field{{Path: "city.names.en", Column: "site"}}},
		{Kind: List, Path: iocs, Merge: MergeTop, Set: []Constant{{Path: "country.iso_code", Value: "ZZ"}}},
	}); err != nil {
		t.Fatal(err)
	}
	m, _ := lookupAny(t, out2, "10.20.1.1")
	if get(m, "country.iso_code") != nil || get(m, "city.names.en") != "HQ" {
		t.Errorf("replace: got %v", m)
	}
	// Top-level merge: the IoC's country replaces the whole country map
	// but keeps city.
	m, _ = lookupAny(t, out2, "10.20.5.5")
	if get(m, "country.iso_code") != "ZZ" || get(m, "city.names.en") != "HQ" {
		t.Errorf("top merge: got %v", m)
	}

	// The city file decodes into geoip2-golang's City with the fields
	// Logstash and Elasticsearch read.
	city := decodeCity(t, out, "10.20.5.5")
	if city.City.Names.English != "HQ" || city.Country.ISOCode != "DE" ||
		city.Location.Latitude == nil || *city.Location.Latitude != 52.52 ||
		city.Location.Longitude == nil || *city.Location.Longitude != 13.405 {
		t.Errorf("geoip2 City: %+v", city)
	}
}

// TestCityProfileAllFields maps every field MMDB-COMPAT.md says Logstash or
// Elasticsearch read, and decodes it with geoip2-golang's City.
func TestCityProfileAllFields(t *testing.T) {
	dir := t.TempDir()
	csv := write(t, dir, "sites.csv", `cidr,site,cc,country,cont,contname,lat,lon,tz,postal,metro,acc,zone,zonecode,eu,gid,rcc
10.20.0.0/16,HQ Berlin,DE,Germany,EU,Europe,52.52,13.405,Europe/Berlin,HQ-01,807,5,Campus,BE,true,2950159,DE
`)
	out := filepath.Join(dir, "city.mmdb")
	fields := []string{
		"city.names.en=site", "city.geoname_id=gid", "country.iso_code=cc", "country.names.en=country",
		"country.is_in_european_union=eu", "continent.code=cont", "continent.names.en=contname",
		"location.latitude=lat", "location.longitude=lon", "location.time_zone=tz",
		"location.metro_code=metro", "location.accuracy_radius=acc", "postal.code=postal",
		"subdivisions.0.names.en=zone", "subdivisions.0.iso_code=zonecode",
		"registered_country.iso_code=rcc", "site_code=postal",
	}
	var fs []Field
	for _, s := range fields {
		f, err := ParseField(s)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	if _, err := Compile(out, Options{Profile: ProfileCity, DatabaseType: "Acme-Internal-City", BuildEpoch: 1},
		[]Source{{Kind: CSVNetworks, Path: csv, NetworkColumn: "cidr", Fields: fs}}); err != nil {
		t.Fatal(err)
	}
	c := decodeCity(t, out, "10.20.3.4")
	if c.City.Names.English != "HQ Berlin" || c.City.GeoNameID != 2950159 ||
		c.Country.ISOCode != "DE" || c.Country.Names.English != "Germany" || !c.Country.IsInEuropeanUnion ||
		c.Continent.Code != "EU" || c.Continent.Names.English != "Europe" ||
		*c.Location.Latitude != 52.52 || *c.Location.Longitude != 13.405 ||
		c.Location.TimeZone != "Europe/Berlin" || c.Location.AccuracyRadius != 5 ||
		c.Postal.Code != "HQ-01" || len(c.Subdivisions) != 1 || c.Subdivisions[0].Names.English != "Campus" ||
		c.Subdivisions[0].ISOCode != "BE" || c.RegisteredCountry.ISOCode != "DE" {
		t.Errorf("City = %+v", c)
	}
	m, _ := lookupAny(t, out, "10.20.3.4")
	// Read from the map: geoip2's City no longer decodes the metro code.
	if mc := get(m, "location.metro_code"); mc != uint64(807) {
		t.Errorf("location.metro_code = %v (%T), want 807", mc, mc)
	}
	if get(m, "x_internal.site_code") != "HQ-01" {
		t.Errorf("custom field not under x_internal: %v", m)
	}
}

func TestCompileErrors(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "ok.csv", "cidr,asn\n10.0.0.0/8,64512\n")
	cases := []struct {
		name, body string
		opts       Options
		fields     []Field
		want       string
	}{
		{"bad cidr", "cidr,asn\n10.0.0.0/8,1\n10.0.0.300/8,2\n", Options{}, nil, "bad.csv:3:1: "},
		{"host bits", "cidr,asn\n10.0.0.1/8,1\n", Options{}, nil, "host bits set"},
		{"bad uint32", "cidr,asn\n10.0.0.0/8,1\n11.0.0.0/8,x1\n", Options{Profile: ProfileASN},
			[]Field{{Path: "autonomous_system_number", Column: "asn"}}, "bad.csv:3:12: autonomous_system_number: \"x1\" is not a uint32"},
		{"wrong type", "cidr,asn\n10.0.0.0/8,1\n", Options{Profile: ProfileASN},
			[]Field{{Path: "autonomous_system_number", Type: TypeUint16, Column: "asn"}}, "must be uint32"},
		{"unknown city path", "cidr,asn\n10.0.0.0/8,1\n", Options{Profile: ProfileCity},
			[]Field{{Path: "city.foo", Column: "asn"}}, "not a field of the city profile"},
		{"asn network key", "cidr,asn\n10.0.0.0/8,1\n", Options{Profile: ProfileASN},
			[]Field{{Path: "network", Column: "asn"}}, "decodes \"network\" itself"},
		{"bad db type", "cidr,asn\n10.0.0.0/8,1\n", Options{Profile: ProfileCity, DatabaseType: "Acme-Sites"}, nil, "must end in -City"},
		// A ragged row: at the first field too many, or just past the
		// last field where one is missing.
		{"short row", "cidr,asn\n10.0.0.0/8\n", Options{}, nil, "bad.csv:2:11: 1 fields, want 2"},
		{"long row", "cidr,asn\n10.0.0.0/8,1,\"x\ny\"\n", Options{}, nil, "bad.csv:2:14: 3 fields, want 2"},
		{"short quoted row", "cidr,asn\n\"10.0.0.0/8\n\"\r\n", Options{}, nil, "bad.csv:3:2: 1 fields, want 2"},
		{"quote", "cidr,asn\n10.0.0.0/8,\"x\n", Options{}, nil, "bad.csv:2:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, dir, "bad.csv", c.body)
			out := filepath.Join(dir, "out.mmdb")
			if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.opts.BuildEpoch = 1
			_, err := Compile(out, c.opts, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr", Fields: c.fields}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if b, _ := os.ReadFile(out); string(b) != "old" {
				t.Fatal("failed build replaced the output")
			}
		})
	}
	// A range end before its start names the end column.
	p := write(t, dir, "r.csv", "a,b,v\n1.0.0.9,1.0.0.1,x\n")
	_, err := Compile(filepath.Join(dir, "r.mmdb"), Options{BuildEpoch: 1}, []Source{{Kind: CSVRanges, Path: p, StartColumn: "a", EndColumn: "b"}})
	var re *source.RowError
	if !errors.As(err, &re) || re.Line != 2 || re.Column != 9 {
		t.Fatalf("err = %#v", err)
	}
	_ = good

	// An IPv6 network in an IPv4 database is a bad row too, at its
	// address field: in a CSV file (quoted, the column is the quote's)
	// and in a list (after indentation).
	p = write(t, dir, "v6.csv", "label,cidr\nx,10.0.0.0/8\ny,\"2001:db8::/32\"\n")
	_, err = Compile(filepath.Join(dir, "v6.mmdb"), Options{BuildEpoch: 1, IPVersion: 4}, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr"}})
	if !errors.As(err, &re) || re.Line != 3 || re.Column != 3 || !strings.Contains(err.Error(), "IPv6 network 2001:db8::/32 in an IPv4 database") {
		t.Fatalf("err = %#v (%v)", err, err)
	}
	// After a quoted field over two lines, the address field's own line.
	p = write(t, dir, "v6q.csv", "label,cidr\n\"two\nlines\",2001:db8::/32\n")
	_, err = Compile(filepath.Join(dir, "v6q.mmdb"), Options{BuildEpoch: 1, IPVersion: 4}, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr"}})
	if !errors.As(err, &re) || re.Line != 3 || re.Column != 8 {
		t.Fatalf("err = %#v (%v)", err, err)
	}
	p = write(t, dir, "v6.txt", "10.0.0.0/8\n\n  2001:db8::1 # a host\n")
	_, err = Compile(filepath.Join(dir, "v6l.mmdb"), Options{BuildEpoch: 1, IPVersion: 4}, []Source{{Kind: List, Path: p, Set: []Constant{{Path: "threat.ioc", Value: "true"}}}})
	if !errors.As(err, &re) || re.Line != 3 || re.Column != 3 {
		t.Fatalf("err = %#v (%v)", err, err)
	}
}

func TestDeterministicAndIntegerRanges(t *testing.T) {
	dir := t.TempDir()
	// Integer bounds: IPv4 (16777216 = 1.0.0.0) and IPv6 (2^64 ...).
	p := write(t, dir, "int.csv", `s,e,label
16777216,16777471,a
16777472,16777727,b
18446744073709551616,18446744073709551871,c
`)
	src := []Source{{Kind: CSVRanges, Path: p, StartColumn: "s", EndColumn: "e"}}
	a, b := filepath.Join(dir, "a.mmdb"), filepath.Join(dir, "b.mmdb")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if _, err := Compile(a, Options{}, src); err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(b, Options{}, src); err != nil {
		t.Fatal(err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ba) != string(bb) {
		t.Fatal("same inputs gave different bytes")
	}
	for ip, want := range map[string]string{"1.0.0.5": "a", "1.0.1.255": "b", "0:0:0:1::ff": "c"} {
		m, _ := lookupAny(t, a, ip)
		if get(m, "label") != want {
			t.Errorf("%s: %v, want %s", ip, m, want)
		}
	}
	db, _ := maxminddb.Open(a)
	defer db.Close()
	if db.Metadata.BuildEpoch != 1700000000 {
		t.Errorf("build epoch %d", db.Metadata.BuildEpoch)
	}
}
