// Package mmdb_test runs the MaxMind DB readers other software uses against
// a city file and an ASN file that lut compiles as docs/mmdb.md recommends:
// Python geoip2 and maxminddb, Perl's GeoIP2::Database::Reader, nginx's
// geoip2 module, mmdblookup, maxminddb-golang and geoip2-golang. Each must
// return the source CSV's values for the first, middle and last address of
// every site, IPv4 and IPv6, and for the IPv4-mapped, Teredo and 6to4
// forms of the IPv4 addresses (the files have the IPv4 aliases), and find
// nothing outside the sites. docs/interop.md, "MMDB readers", lists them.
package mmdb_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

var lutBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lut-interop-mmdb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	lutBin = filepath.Join(dir, "lut")
	build := exec.Command("go", "build", "-o", lutBin, "github.com/lutkit/lutkit/cmd/lut")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lut:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// site is one row of the city source.
type site struct {
	network          string
	name, cc, nameCC string
	lat, lon         float64
}

var sites = []site{
	{"10.20.0.0/16", "HQ Berlin", "DE", "Germany", 52.52, 13.405},
	{"81.2.69.0/24", "Branch London", "GB", "United Kingdom", 51.5074, -0.1278},
	{"198.51.100.128/25", "Büro Zürich", "CH", "Switzerland", 47.3769, 8.5417},
	{"2001:db8:100::/48", "DC Amsterdam", "NL", "Netherlands", 52.37, 4.89},
	{"fd00:1234::/32", "Edge Tokyo", "JP", "Japan", 35.6762, 139.6503},
	{"2a02:1234:5600::/40", "Cloud Sydney", "AU", "Australia", -33.8688, 151.2093},
}

// owner is one row of the ASN source: inclusive ranges, not CIDR-aligned.
type owner struct {
	start, end string
	asn        uint64
	org        string
}

var owners = []owner{
	{"10.20.0.0", "10.20.255.255", 64512, "Platform Team"},
	{"81.2.69.1", "81.2.69.200", 64513, "Web Team"},
	{"2001:db8:100::", "2001:db8:100:ffff:ffff:ffff:ffff:ffff", 64514, "Storage, Backup and Archive"},
	{"2a02:1234:5600::7", "2a02:1234:56ff::ffff", 64515, "Cloud Team"},
	{"fd00:1234::", "fd00:1234:ffff:ffff:ffff:ffff:ffff:ffff", 64516, "Edge Team"},
}

// answer is what a reader returned for one address: found values, not
// found, or an error.
type answer struct {
	Err   string  `json:"err,omitempty"`
	Found bool    `json:"found"`
	City  string  `json:"city,omitempty"`
	CC    string  `json:"cc,omitempty"`
	Lat   float64 `json:"lat,omitempty"`
	Lon   float64 `json:"lon,omitempty"`
	ASN   uint64  `json:"asn,omitempty"`
	Org   string  `json:"org,omitempty"`
}

func (a answer) String() string {
	switch {
	case a.Err != "":
		return "error: " + a.Err
	case !a.Found:
		return "not found"
	case a.City != "" || a.CC != "":
		return fmt.Sprintf("%s/%s/%.4f/%.4f", a.City, a.CC, a.Lat, a.Lon)
	}
	return fmt.Sprintf("AS%d %s", a.ASN, a.Org)
}

func (a answer) same(b answer) bool {
	return a.Err == "" && b.Err == "" && a.Found == b.Found && a.City == b.City && a.CC == b.CC &&
		math.Abs(a.Lat-b.Lat) < 1e-4 && math.Abs(a.Lon-b.Lon) < 1e-4 && a.ASN == b.ASN && a.Org == b.Org
}

// probe is one address looked up in one file.
type probe struct {
	DB string `json:"db"` // "city" or "asn"
	IP string `json:"ip"`
}

// ipv4Of returns the IPv4 address an alias form stands for: ::ffff:a.b.c.d,
// 2001:0:aabb:ccdd:: (Teredo, bits 32-63) and 2002:aabb:ccdd:: (6to4, bits
// 16-47).
func ipv4Of(a netip.Addr) netip.Addr {
	b := a.As16()
	switch {
	case a.Is4() || a.Is4In6():
		return a.Unmap()
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		return netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return a
}

// expected is the source's answer for a probe.
func expected(p probe) answer {
	ip := ipv4Of(netip.MustParseAddr(p.IP))
	if p.DB == "city" {
		for _, s := range sites {
			if netip.MustParsePrefix(s.network).Contains(ip) {
				return answer{Found: true, City: s.name, CC: s.cc, Lat: s.lat, Lon: s.lon}
			}
		}
		return answer{}
	}
	for _, o := range owners {
		if !ip.Less(netip.MustParseAddr(o.start)) && !netip.MustParseAddr(o.end).Less(ip) {
			return answer{Found: true, ASN: o.asn, Org: o.org}
		}
	}
	return answer{}
}

func middle(a, b netip.Addr) netip.Addr {
	x, y := a.As16(), b.As16()
	var m [16]byte
	carry := 0
	for i := 15; i >= 0; i-- {
		s := int(x[i]) + int(y[i]) + carry
		m[i], carry = byte(s), s>>8
	}
	for i := 0; i < 16; i++ { // halve the 129-bit sum
		next := m[i] & 1
		m[i] = m[i]>>1 | byte(carry<<7)
		carry = int(next)
	}
	r := netip.AddrFrom16(m)
	if a.Is4() {
		return r.Unmap()
	}
	return r
}

// aliasForms returns the IPv4-mapped, Teredo and 6to4 forms of an IPv4
// address.
func aliasForms(a netip.Addr) []string {
	b := a.As4()
	return []string{
		"::ffff:" + a.String(),
		fmt.Sprintf("2001:0:%02x%02x:%02x%02x::1", b[0], b[1], b[2], b[3]),
		fmt.Sprintf("2002:%02x%02x:%02x%02x::1", b[0], b[1], b[2], b[3]),
	}
}

// probes are the first, middle and last address of every site and owner
// range, the alias forms of the IPv4 ones, and addresses in no site.
func probes() []probe {
	var out []probe
	add := func(db string, first, last netip.Addr) {
		for _, a := range []netip.Addr{first, middle(first, last), last} {
			out = append(out, probe{db, a.String()})
			if a.Is4() {
				for _, f := range aliasForms(a) {
					out = append(out, probe{db, f})
				}
			}
		}
	}
	for _, s := range sites {
		p := netip.MustParsePrefix(s.network)
		last := p.Addr().As16()
		bits := p.Bits()
		if p.Addr().Is4() {
			bits += 96
		}
		for i := bits; i < 128; i++ {
			last[i/8] |= 1 << (7 - i%8)
		}
		l := netip.AddrFrom16(last)
		if p.Addr().Is4() {
			l = l.Unmap()
		}
		add("city", p.Addr(), l)
	}
	for _, o := range owners {
		add("asn", netip.MustParseAddr(o.start), netip.MustParseAddr(o.end))
	}
	outside := []string{"1.1.1.1", "10.19.255.255", "10.21.0.0", "81.2.68.255", "81.2.70.0",
		"81.2.69.0", "81.2.69.201", "198.51.100.127", "2001:db8:ff:ffff:ffff:ffff:ffff:ffff",
		"2001:db8:101::", "2a02:1234:5700::", "fd00:1235::1", "::ffff:1.1.1.1", "2002:101:101::1", "2001:0:101:101::1"}
	for _, ip := range outside {
		out = append(out, probe{"city", ip}, probe{"asn", ip})
	}
	return out
}

type files struct{ city, asn string }

// build compiles the two files as docs/mmdb.md recommends.
func build(t *testing.T) files {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("network,site,country,country_name,lat,lon\n")
	for _, s := range sites {
		fmt.Fprintf(&b, "%s,%s,%s,%s,%g,%g\n", s.network, s.name, s.cc, s.nameCC, s.lat, s.lon)
	}
	sitesCSV := filepath.Join(dir, "sites.csv")
	if err := os.WriteFile(sitesCSV, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.WriteString("start,end,asn,owner\n")
	for _, o := range owners {
		fmt.Fprintf(&b, "%s,%s,%d,%q\n", o.start, o.end, o.asn, o.org)
	}
	ownersCSV := filepath.Join(dir, "owners.csv")
	if err := os.WriteFile(ownersCSV, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f := files{city: filepath.Join(dir, "sites.mmdb"), asn: filepath.Join(dir, "owners.mmdb")}
	lut := func(args ...string) string {
		out, err := exec.Command(lutBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("lut %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := lut("compile", "--out", f.city, "--profile", "city", "--database-type", "GeoLite2-City",
		"--network", "network", "--field", "city.names.en=site", "--field", "country.iso_code=country",
		"--field", "country.names.en=country_name", "--field", "location.latitude=lat",
		"--field", "location.longitude=lon", sitesCSV)
	if !strings.Contains(out, "IPv4 aliases,") {
		t.Fatalf("the city file has no IPv4 aliases:\n%s", out)
	}
	lut("compile", "--out", f.asn, "--profile", "asn", "--database-type", "GeoLite2-ASN",
		"--range", "start,end", "--field", "autonomous_system_number=asn",
		"--field", "autonomous_system_organization=owner", ownersCSV)
	// lut verify finds nothing but what TestPerlGeoIP2 shows: Perl's
	// reader refuses the private networks.
	for _, path := range []string{f.city, f.asn} {
		cmd := exec.Command(lutBin, "verify", path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), ": ok (valid MaxMind DB") {
			t.Fatalf("lut verify %s: %v\n%s%s", path, err, &stdout, &stderr)
		}
		warnings := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(warnings) != 2 || !strings.Contains(warnings[0], "warning: Perl GeoIP2::Database::Reader: refuses to look up addresses in 10.0.0.0/8") ||
			!strings.Contains(warnings[1], "warning: Perl GeoIP2::Database::Reader: refuses to look up addresses in fc00::/7") {
			t.Fatalf("lut verify %s warnings:\n%s", path, &stderr)
		}
	}
	return f
}

// check compares a reader's answers with the source, where want gives the
// expected answer (the source's, unless the reader differs by design).
func check(t *testing.T, reader string, ps []probe, got []answer, want func(probe) answer) {
	t.Helper()
	if len(got) != len(ps) {
		t.Fatalf("%s: %d answers for %d probes", reader, len(got), len(ps))
	}
	bad := 0
	for i, p := range ps {
		w := want(p)
		ok := got[i].same(w)
		if w.Err != "" {
			ok = strings.Contains(got[i].Err, w.Err)
		}
		if !ok {
			if bad++; bad <= 60 {
				t.Errorf("%s: %s %s: got %s, want %s", reader, p.DB, p.IP, got[i], w)
			}
		}
	}
	if bad == 0 {
		t.Logf("%s: %d addresses as in the source", reader, len(ps))
	}
}

// runScript runs a reader script that reads the probes as JSON on stdin
// and writes one answer per probe as a JSON array.
func runScript(t *testing.T, name string, args []string, ps []probe) []answer {
	t.Helper()
	in, _ := json.Marshal(ps)
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	var got []answer
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return got
}

func need(t *testing.T, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testfiles.Missing(t, path+" (Debian package "+pkg+")")
	}
}

func ipAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
