package mmdb_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// syslogNGGeoIP2Conf is the configuration of docs/syslog-ng.md: each
// message (one address) goes through syslog-ng's geoip2 parser on the city
// file; the destination writes the address and the fields the parser set
// under the prefix geo.
const syslogNGGeoIP2Conf = `@version: 3.38
@module geoip2-plugin
options { stats-freq(0); };
source s_in { stdin(flags(no-parse)); };
parser p_geo { geoip2("${MESSAGE}" prefix("geo.") database("%s")); };
destination d_out { file("%s" template("${MESSAGE}|${geo.city.names.en}|${geo.country.iso_code}|${geo.location.latitude}|${geo.location.longitude}\n")); };
log { source(s_in); parser(p_geo); destination(d_out); };
`

// TestSyslogNGGeoIP2 runs syslog-ng's geoip2 parser (Debian
// syslog-ng-mod-geoip2, on libmaxminddb) on the city file lut builds, for
// every probe address (first, middle and last of every site, their IPv4
// alias forms, and addresses outside the sites): it must set the source's
// city name, or nothing. syslog-ng 3.38 sets no field after the city of
// that file's records (country and location stay empty, while it reads
// MaxMind's GeoIP2-City-Test.mmdb in full), so the country and location
// are checked on a second file, built without the city names, on which it
// must set both, or nothing (docs/syslog-ng.md says so).
func TestSyslogNGGeoIP2(t *testing.T) {
	bin, err := exec.LookPath("syslog-ng")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/syslog-ng"); serr != nil {
			testfiles.Missing(t, "syslog-ng (Debian package syslog-ng-core)")
		}
		bin = "/usr/sbin/syslog-ng"
	}
	mods, _ := filepath.Glob("/usr/lib/syslog-ng/*/libgeoip2-plugin.so")
	if len(mods) == 0 {
		testfiles.Missing(t, "syslog-ng's geoip2 module (Debian package syslog-ng-mod-geoip2)")
	}
	f := build(t)
	var ps []probe
	for _, p := range probes() {
		if p.DB == "city" {
			ps = append(ps, p)
		}
	}
	got := runSyslogNGGeoIP2(t, bin, f.city, ps)
	check(t, "syslog-ng geoip2 (city names)", ps, got, func(p probe) answer {
		w := expected(p)
		return answer{Found: w.Found, City: w.City}
	})
	for i, a := range got {
		if a.CC != "" {
			t.Logf("syslog-ng now sets the country of the full city file (%s: %s): docs/syslog-ng.md can say so", ps[i].IP, a.CC)
			break
		}
	}

	// The country and location, from a file without the city names.
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("network,country,country_name,lat,lon\n")
	for _, s := range sites {
		fmt.Fprintf(&b, "%s,%s,%s,%g,%g\n", s.network, s.cc, s.nameCC, s.lat, s.lon)
	}
	csv := filepath.Join(dir, "geo.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	geo := filepath.Join(dir, "geo.mmdb")
	if out, err := exec.Command(lutBin, "compile", "--out", geo, "--profile", "city", "--database-type", "GeoLite2-City",
		"--network", "network", "--field", "country.iso_code=country", "--field", "country.names.en=country_name",
		"--field", "location.latitude=lat", "--field", "location.longitude=lon", csv).CombinedOutput(); err != nil {
		t.Fatalf("lut compile: %v\n%s", err, out)
	}
	got = runSyslogNGGeoIP2(t, bin, geo, ps)
	check(t, "syslog-ng geoip2 (country and location)", ps, got, func(p probe) answer {
		w := expected(p)
		w.City = ""
		return w
	})
}

// runSyslogNGGeoIP2 runs syslog-ng with syslogNGGeoIP2Conf on db, the
// probes' addresses on its standard input, and returns what it set for
// each.
func runSyslogNGGeoIP2(t *testing.T, bin, db string, ps []probe) []answer {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	conf := filepath.Join(dir, "syslog-ng.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(syslogNGGeoIP2Conf, db, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, p := range ps {
		fmt.Fprintln(&in, p.IP)
	}
	// With stdin() syslog-ng ends when its input does, having written
	// every message.
	cmd := exec.Command(bin, "-F", "--no-caps", "-f", conf, "-p", filepath.Join(dir, "pid"),
		"-R", filepath.Join(dir, "persist"), "-c", filepath.Join(dir, "ctl"))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("syslog-ng: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got []answer
	sc := bufio.NewScanner(bytes.NewReader(b))
	for i := 0; sc.Scan(); i++ {
		parts := strings.Split(sc.Text(), "|")
		if len(parts) != 5 {
			t.Fatalf("line %d: %q", i+1, sc.Text())
		}
		if i < len(ps) && parts[0] != ps[i].IP {
			t.Fatalf("line %d is %s, want %s", i+1, parts[0], ps[i].IP)
		}
		a := answer{Found: parts[1] != "" || parts[2] != "", City: parts[1], CC: parts[2]}
		if parts[2] != "" {
			a.Lat, _ = strconv.ParseFloat(parts[3], 64)
			a.Lon, _ = strconv.ParseFloat(parts[4], 64)
		}
		got = append(got, a)
	}
	return got
}
