package mmdb_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oschwald/geoip2-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/reader/mmdb"
)

const python = "/usr/bin/python3" // Debian's python, with python3-geoip2 and python3-maxminddb

func needPython(t *testing.T, module, pkg string) {
	t.Helper()
	need(t, python, "python3")
	if err := exec.Command(python, "-c", "import "+module).Run(); err != nil {
		testfiles.Missing(t, "Python module "+module+" for "+python+" (Debian package "+pkg+")")
	}
}

const pythonGeoIP2 = `
import sys, json, geoip2.database, geoip2.errors
city = geoip2.database.Reader(sys.argv[1])
asn = geoip2.database.Reader(sys.argv[2])
out = []
for p in json.load(sys.stdin):
    try:
        if p["db"] == "city":
            r = city.city(p["ip"])
            out.append({"found": True, "city": r.city.name, "cc": r.country.iso_code,
                        "lat": r.location.latitude, "lon": r.location.longitude})
        else:
            r = asn.asn(p["ip"])
            out.append({"found": True, "asn": r.autonomous_system_number,
                        "org": r.autonomous_system_organization})
    except geoip2.errors.AddressNotFoundError:
        out.append({"found": False})
    except Exception as e:
        out.append({"found": False, "err": "%s: %s" % (type(e).__name__, e)})
json.dump(out, sys.stdout)
`

func TestPythonGeoIP2(t *testing.T) {
	needPython(t, "geoip2.database", "python3-geoip2")
	f := build(t)
	ps := probes()
	got := runScript(t, python, []string{"-c", pythonGeoIP2, f.city, f.asn}, ps)
	check(t, "Python geoip2 Reader.city()/asn()", ps, got, expected)
}

const pythonMaxminddb = `
import sys, json, maxminddb
dbs = {"city": maxminddb.open_database(sys.argv[1]), "asn": maxminddb.open_database(sys.argv[2])}
out = []
for p in json.load(sys.stdin):
    r = dbs[p["db"]].get(p["ip"])
    if r is None:
        out.append({"found": False})
    elif p["db"] == "city":
        out.append({"found": True, "city": r["city"]["names"]["en"], "cc": r["country"]["iso_code"],
                    "lat": r["location"]["latitude"], "lon": r["location"]["longitude"]})
    else:
        out.append({"found": True, "asn": r["autonomous_system_number"],
                    "org": r["autonomous_system_organization"]})
json.dump(out, sys.stdout)
`

func TestPythonMaxminddb(t *testing.T) {
	needPython(t, "maxminddb", "python3-maxminddb")
	f := build(t)
	ps := probes()
	got := runScript(t, python, []string{"-c", pythonMaxminddb, f.city, f.asn}, ps)
	check(t, "Python maxminddb get()", ps, got, expected)
}

const perlGeoIP2 = `
use strict; use warnings; use JSON::PP; use GeoIP2::Database::Reader;
my $city = GeoIP2::Database::Reader->new(file => $ARGV[0], locales => ['en']);
my $asn = GeoIP2::Database::Reader->new(file => $ARGV[1], locales => ['en']);
my $probes = do { local $/; decode_json(<STDIN>) };
my @out;
for my $p (@$probes) {
    my $r;
    eval {
        if ($p->{db} eq 'city') {
            my $m = $city->city(ip => $p->{ip});
            $r = {found => JSON::PP::true, city => $m->city->name, cc => $m->country->iso_code,
                  lat => 0 + $m->location->latitude, lon => 0 + $m->location->longitude};
        } else {
            my $m = $asn->asn(ip => $p->{ip});
            $r = {found => JSON::PP::true, asn => 0 + $m->autonomous_system_number,
                  org => $m->autonomous_system_organization};
        }
        1;
    } or do {
        my $e = $@;
        if (ref $e && $e->isa('GeoIP2::Error::IPAddressNotFound')) {
            $r = {found => JSON::PP::false};
        } else {
            $r = {found => JSON::PP::false, err => (ref $e && $e->can('message')) ? $e->message : "$e"};
        }
    };
    push @out, $r;
}
print JSON::PP->new->utf8->encode(\@out);
`

// TestPerlGeoIP2: Perl's reader refuses private addresses (10.0.0.0/8,
// fc00::/7, ...) before it reads the file; their IPv4-mapped, Teredo and
// 6to4 forms it looks up.
func TestPerlGeoIP2(t *testing.T) {
	need(t, "/usr/share/perl5/GeoIP2/Database/Reader.pm", "libgeoip2-perl")
	f := build(t)
	ps := probes()
	got := runScript(t, "perl", []string{"-e", perlGeoIP2, f.city, f.asn}, ps)
	refused := 0
	check(t, "Perl GeoIP2::Database::Reader city()/asn()", ps, got, func(p probe) answer {
		ip := netip.MustParseAddr(p.IP)
		for _, n := range mmdb.PerlPrivateNetworks {
			if n.Contains(ip) {
				refused++
				return answer{Err: "is not a public IP address"}
			}
		}
		return expected(p)
	})
	if refused == 0 {
		t.Error("no probe of a private address")
	}
}

// mmdblookupValue runs mmdblookup for one data path; found is false when
// the address has no record.
func mmdblookupValue(t *testing.T, file, ip string, path ...string) (string, bool) {
	t.Helper()
	out, err := exec.Command("mmdblookup", append([]string{"-f", file, "--ip", ip}, path...)...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if strings.Contains(s, "Could not find an entry") {
		return "", false
	}
	if err != nil {
		t.Fatalf("mmdblookup %s %s: %v\n%s", ip, path, err, out)
	}
	// "value <type>", strings quoted.
	v, _, _ := strings.Cut(s, " <")
	return strings.Trim(v, `"`), true
}

func TestMmdblookup(t *testing.T) {
	bin, err := exec.LookPath("mmdblookup")
	if err != nil {
		testfiles.Missing(t, "mmdblookup (Debian package mmdb-bin)")
	}
	t.Logf("using %s", bin)
	f := build(t)
	ps := probes()
	var got []answer
	for _, p := range ps {
		var a answer
		if p.DB == "city" {
			a.City, a.Found = mmdblookupValue(t, f.city, p.IP, "city", "names", "en")
			if a.Found {
				a.CC, _ = mmdblookupValue(t, f.city, p.IP, "country", "iso_code")
				lat, _ := mmdblookupValue(t, f.city, p.IP, "location", "latitude")
				lon, _ := mmdblookupValue(t, f.city, p.IP, "location", "longitude")
				a.Lat, _ = strconv.ParseFloat(lat, 64)
				a.Lon, _ = strconv.ParseFloat(lon, 64)
			}
		} else {
			var asn string
			asn, a.Found = mmdblookupValue(t, f.asn, p.IP, "autonomous_system_number")
			if a.Found {
				a.ASN, _ = strconv.ParseUint(asn, 10, 64)
				a.Org, _ = mmdblookupValue(t, f.asn, p.IP, "autonomous_system_organization")
			}
		}
		got = append(got, a)
	}
	check(t, "mmdblookup", ps, got, expected)
}

func TestMaxminddbGolang(t *testing.T) {
	f := build(t)
	dbs := map[string]*maxminddb.Reader{}
	for db, path := range map[string]string{"city": f.city, "asn": f.asn} {
		r, err := maxminddb.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		dbs[db] = r
	}
	ps := probes()
	var got []answer
	for _, p := range ps {
		res := dbs[p.DB].Lookup(netip.MustParseAddr(p.IP))
		var a answer
		if res.Found() {
			var rec struct {
				City struct {
					Names map[string]string `maxminddb:"names"`
				} `maxminddb:"city"`
				Country struct {
					ISOCode string `maxminddb:"iso_code"`
				} `maxminddb:"country"`
				Location struct {
					Lat float64 `maxminddb:"latitude"`
					Lon float64 `maxminddb:"longitude"`
				} `maxminddb:"location"`
				ASN uint64 `maxminddb:"autonomous_system_number"`
				Org string `maxminddb:"autonomous_system_organization"`
			}
			if err := res.Decode(&rec); err != nil {
				a.Err = err.Error()
			}
			a = answer{Err: a.Err, Found: true, City: rec.City.Names["en"], CC: rec.Country.ISOCode,
				Lat: rec.Location.Lat, Lon: rec.Location.Lon, ASN: rec.ASN, Org: rec.Org}
		} else if err := res.Err(); err != nil {
			a.Err = err.Error()
		}
		got = append(got, a)
	}
	check(t, "maxminddb-golang Lookup", ps, got, expected)
}

func TestGeoIP2Golang(t *testing.T) {
	f := build(t)
	city, err := geoip2.Open(f.city)
	if err != nil {
		t.Fatal(err)
	}
	defer city.Close()
	asn, err := geoip2.Open(f.asn)
	if err != nil {
		t.Fatal(err)
	}
	defer asn.Close()
	ps := probes()
	var got []answer
	for _, p := range ps {
		ip := netip.MustParseAddr(p.IP)
		var a answer
		if p.DB == "city" {
			r, err := city.City(ip)
			switch {
			case err != nil:
				a.Err = err.Error()
			case r.HasData():
				a = answer{Found: true, City: r.City.Names.English, CC: r.Country.ISOCode}
				if r.Location.HasData() {
					a.Lat, a.Lon = *r.Location.Latitude, *r.Location.Longitude
				}
			}
		} else {
			r, err := asn.ASN(ip)
			switch {
			case err != nil:
				a.Err = err.Error()
			case r.HasData():
				a = answer{Found: true, ASN: uint64(r.AutonomousSystemNumber), Org: r.AutonomousSystemOrganization}
			}
		}
		got = append(got, a)
	}
	check(t, "geoip2-golang City()/ASN()", ps, got, expected)
}

const nginxModule = "/usr/lib/nginx/modules/ngx_http_geoip2_module.so"

// TestNginxGeoIP2: nginx with libnginx-mod-http-geoip2 maps the lookup of
// the ip query argument into variables, which the response returns.
func TestNginxGeoIP2(t *testing.T) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			testfiles.Missing(t, "nginx (Debian package nginx-light)")
		}
		bin = "/usr/sbin/nginx"
	}
	need(t, nginxModule, "libnginx-mod-http-geoip2")
	f := build(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`load_module %[1]s;
daemon off;
master_process off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    geoip2 %[3]s {
        $site_city source=$arg_ip city names en;
        $site_cc source=$arg_ip country iso_code;
        $site_lat source=$arg_ip location latitude;
        $site_lon source=$arg_ip location longitude;
    }
    geoip2 %[4]s {
        $owner_asn source=$arg_ip autonomous_system_number;
        $owner_org source=$arg_ip autonomous_system_organization;
    }
    server {
        listen 127.0.0.1:%[5]d;
        location / {
            default_type text/plain;
            return 200 "$site_city|$site_cc|$site_lat|$site_lon|$owner_asn|$owner_org";
        }
    }
}
`, nginxModule, dir, f.city, f.asn, port)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Killed, nginx has nothing to report: Wait only reaps it.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	// Drained so that nginx never blocks on a full pipe; what it says
	// goes to error.log, shown on failure.
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	var up bool
	for range 100 {
		if resp, err := http.Get(base); err == nil {
			resp.Body.Close()
			up = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !up {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		t.Fatalf("nginx did not answer on port %d\n%s", port, log)
	}
	ps := probes()
	var got []answer
	for _, p := range ps {
		// $arg_ip is the raw query argument: the module parses it as it
		// comes, so the address goes unescaped (its characters need none).
		resp, err := http.Get(base + "?ip=" + p.IP)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		v := strings.Split(string(body), "|")
		if resp.StatusCode != http.StatusOK || len(v) != 6 {
			t.Fatalf("%s: %d %q", p.IP, resp.StatusCode, body)
		}
		var a answer
		if p.DB == "city" && v[0] != "" {
			a = answer{Found: true, City: v[0], CC: v[1]}
			a.Lat, _ = strconv.ParseFloat(v[2], 64)
			a.Lon, _ = strconv.ParseFloat(v[3], 64)
		}
		if p.DB == "asn" && v[4] != "" {
			a = answer{Found: true, Org: v[5]}
			a.ASN, _ = strconv.ParseUint(v[4], 10, 64)
		}
		got = append(got, a)
	}
	check(t, "nginx geoip2 module", ps, got, expected)
}
