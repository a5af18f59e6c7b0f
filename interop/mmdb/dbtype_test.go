package mmdb_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oschwald/geoip2-golang/v2"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// TestTypedReadersDatabaseType: the typed readers that run here accept or
// refuse a database type exactly as lut's rule table (mmdb.TypeRules,
// which lut compile and lut verify report from) says.
func TestTypedReadersDatabaseType(t *testing.T) {
	need(t, "/usr/share/perl5/GeoIP2/Database/Reader.pm", "libgeoip2-perl")
	needPython(t, "geoip2.database", "python3-geoip2")
	dir := t.TempDir()
	csv := filepath.Join(dir, "s.csv")
	if err := os.WriteFile(csv, []byte("network,site,lat,lon,asn,org\n81.2.69.0/24,London,51.5,-0.12,64513,Web\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := map[mmdb.Model]map[string]mmdb.TypeRule{}
	for m, rs := range mmdb.TypeRules {
		rules[m] = map[string]mmdb.TypeRule{}
		for _, r := range rs {
			rules[m][r.Reader] = r
		}
	}
	for _, c := range []struct {
		profile, typ string
		model        mmdb.Model
	}{
		{"city", "GeoLite2-City", mmdb.ModelCity},
		{"city", "Acme-Internal-City", mmdb.ModelCity},
		{"city", "GeoIP2-City-Europe-City", mmdb.ModelCity},
		{"asn", "GeoLite2-ASN", mmdb.ModelASN},
		{"asn", "Acme-ASN", mmdb.ModelASN},
		{"asn", "Acme-GeoLite2-ASN", mmdb.ModelASN},
	} {
		out := filepath.Join(dir, c.typ+".mmdb")
		args := []string{"compile", "--out", out, "--profile", c.profile, "--database-type", c.typ, "--network", "network"}
		method := "city"
		if c.profile == "city" {
			args = append(args, "--field", "city.names.en=site", "--field", "location.latitude=lat", "--field", "location.longitude=lon")
		} else {
			method = "asn"
			args = append(args, "--field", "autonomous_system_number=asn", "--field", "autonomous_system_organization=org")
		}
		if b, err := exec.Command(lutBin, append(args, csv)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c.typ, err, b)
		}
		perlOK := exec.Command("perl", "-MGeoIP2::Database::Reader", "-e",
			fmt.Sprintf(`GeoIP2::Database::Reader->new(file => $ARGV[0])->%s(ip => "81.2.69.1")`, method), out).Run() == nil
		pyOK := exec.Command(python, "-c", fmt.Sprintf(
			"import sys, geoip2.database; geoip2.database.Reader(sys.argv[1]).%s('81.2.69.1')", method), out).Run() == nil
		var goOK bool
		if r, err := geoip2.Open(out); err == nil {
			if method == "city" {
				_, err = r.City(ipAddr("81.2.69.1"))
			} else {
				_, err = r.ASN(ipAddr("81.2.69.1"))
			}
			goOK = err == nil
			r.Close()
		} else if !errors.As(err, &geoip2.UnknownDatabaseTypeError{}) {
			t.Fatalf("%s: geoip2-golang: %v", c.typ, err)
		}
		for reader, ok := range map[string]bool{
			"Perl GeoIP2::Database::Reader->" + method + "()":                     perlOK,
			"Python geoip2 Reader." + method + "()":                               pyOK,
			"geoip2-golang v2 " + strings.ToUpper(method[:1]) + method[1:] + "()": goOK,
		} {
			if c.model == mmdb.ModelASN && strings.HasPrefix(reader, "geoip2-golang") {
				reader = "geoip2-golang v2 ASN()"
			}
			r, known := rules[c.model][reader]
			if !known {
				t.Fatalf("no rule for %s", reader)
			}
			if r.Accepts(c.typ) != ok {
				t.Errorf("%s reads %s: %v; the rule (%s) says %v", reader, c.typ, ok, r.Rule, r.Accepts(c.typ))
			}
		}
	}
}
