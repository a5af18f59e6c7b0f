package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runLut(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func TestMMDBCommands(t *testing.T) {
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.csv")
	writeFile(t, sites, "cidr,site,lat,lon\n10.20.0.0/16,HQ,52.5,13.4\n2001:db8::/32,HQ6,52.5,13.4\n")
	iocs := filepath.Join(dir, "iocs.txt")
	writeFile(t, iocs, "# list\n10.20.3.4\n")
	out := filepath.Join(dir, "assets.mmdb")
	_, stderr, err := runLut(t, "compile", "--out", out, "--profile", "city", "--database-type", "Acme-Internal-City",
		"--network", "cidr", "--field", "city.names.en=site", "--field", "location.latitude=lat",
		"--field", "location.longitude=lon", "--build-epoch", "1700000000", sites, "--ioc", "feodo="+iocs)
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, stderr)
	}
	// The type and the private network are reported reader by reader.
	for _, want := range []string{
		`lut: warning: Perl GeoIP2::Database::Reader->city(): refuses database type "Acme-Internal-City"`,
		`lut: warning: geoip2-golang v2 City(): refuses database type "Acme-Internal-City"`,
		`lut: warning: Logstash geoip filter 7.2.x (Logstash 8.14 and older): refuses database type "Acme-Internal-City"`,
		`lut: warning: Perl GeoIP2::Database::Reader: refuses to look up addresses in 10.0.0.0/8`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("compile: no %q in\n%s", want, stderr)
		}
	}
	if !isMMDBFile(out) || isMMDBFile(sites) {
		t.Fatal("isMMDBFile wrong")
	}
	stdout, _, err := runLut(t, "get", out, "10.20.3.4", "2001:db8::1")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("get printed %q", stdout)
	}
	var first struct {
		IP, Network string
		Record      map[string]any
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("get: %v: %s", err, lines[0])
	}
	threat, _ := first.Record["x_internal"].(map[string]any)["threat"].(map[string]any)
	if first.Network != "10.20.3.4/32" || threat["list"] != "feodo" || threat["ioc"] != true {
		t.Fatalf("get: %s", lines[0])
	}
	_, _, err = runLut(t, "get", out, "8.8.8.8", "10.20.0.1")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("missing address: err = %v", err)
	}
	_, _, err = runLut(t, "get", out, "not-an-ip")
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("bad address: err = %v", err)
	}
	stdout, _, err = runLut(t, "inspect", out)
	if err != nil || !strings.Contains(stdout, "Acme-Internal-City") || !strings.Contains(stdout, "2023-11-14") {
		t.Fatalf("inspect: %v %s", err, stdout)
	}
	stdout, _, err = runLut(t, "inspect", "--json", out)
	if err != nil || !strings.Contains(stdout, `"record_size": 28`) {
		t.Fatalf("inspect --json: %v %s", err, stdout)
	}
	stdout, _, err = runLut(t, "verify", out)
	if err != nil || !strings.Contains(stdout, "ok") {
		t.Fatalf("verify: %v %s", err, stdout)
	}
	// A headerless range file, with --columns naming the columns.
	asn := filepath.Join(dir, "asn.csv")
	writeFile(t, asn, "1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"\n1.0.4.0,1.0.7.255,38803,Gtelecom\n")
	asnOut := filepath.Join(dir, "asn.mmdb")
	_, stderr, err = runLut(t, "compile", "--out", asnOut, "--range", "ip_range_start,ip_range_end",
		"--columns", "ip_range_start,ip_range_end,autonomous_system_number,autonomous_system_organization", asn)
	if err != nil {
		t.Fatalf("compile asn: %v\n%s", err, stderr)
	}
	stdout, _, err = runLut(t, "get", asnOut, "1.0.5.1")
	if err != nil || !strings.Contains(stdout, `"autonomous_system_number":38803`) || !strings.Contains(stdout, `"network":"1.0.4.0/22"`) {
		t.Fatalf("get asn: %v %s", err, stdout)
	}
}

// TestMMDBListOnly: an .mmdb of IoC lists alone (docs/mmdb.md's
// example: no SOURCE, only --ioc), and one of --base alone, compile; a
// file of 512 bytes or less is written with a warning for the old
// Elasticsearch releases that cannot read it, not refused.
func TestMMDBListOnly(t *testing.T) {
	dir := t.TempDir()
	feodo := filepath.Join(dir, "feodo.txt")
	writeFile(t, feodo, "# Feodo\n1.2.3.4\n5.6.7.0/24\n")
	ioc := filepath.Join(dir, "ioc.mmdb")
	_, stderr, code := run(t, "compile", "--out", ioc, "--profile", "asn", "--database-type", "GeoLite2-ASN",
		"--ioc-set", "autonomous_system_organization=IOC:feodo", "--ioc-set", "autonomous_system_number=1", "--ioc", feodo)
	if code != 0 {
		t.Fatalf("compile of an --ioc list alone: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := run(t, "get", ioc, "5.6.7.8")
	if code != 0 || !strings.Contains(stdout, `"autonomous_system_organization":"IOC:feodo"`) {
		t.Fatalf("get: exit %d, %s%s", code, stdout, stderr)
	}
	based := filepath.Join(dir, "based.mmdb")
	if _, stderr, code := run(t, "compile", "--out", based, "--base", ioc); code != 0 {
		t.Fatalf("compile of a --base alone: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "compile", "--out", filepath.Join(dir, "none.mmdb")); code != 2 || !strings.Contains(stderr, "no sources: give CSV/MMDB files, --base or --ioc") {
		t.Errorf("compile with no source: exit %d, %s", code, stderr)
	}

	one := filepath.Join(dir, "one.csv")
	writeFile(t, one, "network,name\n10.0.0.0/8,a\n")
	small := filepath.Join(dir, "one.mmdb")
	_, stderr, code = run(t, "compile", "--network", "network", "--ip-version", "4", "--out", small, one)
	if code != 0 {
		t.Fatalf("compile of a one-network file: exit %d\n%s", code, stderr)
	}
	if want := "lut: warning: Elasticsearch ingest-geoip releases without PR #112888 (Sept 2024): cannot read a file of 512 bytes or less"; !strings.Contains(stderr, want) {
		t.Errorf("no %q in\n%s", want, stderr)
	}
	if fi, err := os.Stat(small); err != nil || fi.Size() > 512 {
		t.Fatalf("%v, %v: want a file of 512 bytes or less", fi, err)
	}
	if stdout, stderr, code := run(t, "get", small, "10.1.2.3"); code != 0 || !strings.Contains(stdout, `"name":"a"`) {
		t.Errorf("get: exit %d, %s%s", code, stdout, stderr)
	}
}

// TestMMDBLocationRange: a latitude or longitude out of range is refused
// at its file:line:column, or as a flag value, where it was written into
// the file (readers place such a point nowhere).
func TestMMDBLocationRange(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "sites.csv")
	writeFile(t, src, "cidr,site,lat,lon\n10.20.0.0/16,HQ,52.5,13.4\n10.21.0.0/16,X,45,-181\n")
	args := []string{"compile", "--out", filepath.Join(dir, "s.mmdb"), "--profile", "city", "--network", "cidr",
		"--field", "city.names.en=site", "--field", "location.latitude=lat", "--field", "location.longitude=lon", src}
	if _, stderr, code := run(t, args...); code == 0 || !strings.Contains(stderr, "sites.csv:3:19: location.longitude: longitude -181 is outside -180 to 180") {
		t.Errorf("longitude -181: exit %d, %s", code, stderr)
	}
	writeFile(t, src, "cidr,site\n10.20.0.0/16,HQ\n")
	if _, stderr, code := run(t, "compile", "--out", filepath.Join(dir, "d.mmdb"), "--profile", "city", "--network", "cidr",
		"--field", "city.names.en=site", "--default-location", "91,0", src); code != 2 || !strings.Contains(stderr, `want a latitude of -90 to 90 and a longitude of -180 to 180, not "91,0"`) {
		t.Errorf("--default-location 91,0: exit %d, %s", code, stderr)
	}
}

// TestLUTCommandsOnMMDB: export and diff, which read .lut tables, say
// that an .mmdb is one and what reads it, instead of "bad magic".
func TestLUTCommandsOnMMDB(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "l.txt")
	writeFile(t, list, "1.2.3.4\n")
	db := filepath.Join(dir, "l.mmdb")
	if _, stderr, code := run(t, "compile", "--out", db, "--ioc", list); code != 0 {
		t.Fatalf("compile: %d %s", code, stderr)
	}
	for _, args := range [][]string{{"export", db}, {"diff", db, db}} {
		_, stderr, code := run(t, args...)
		if want := args[0] + ": " + db + " is a MaxMind DB (.mmdb); " + args[0] + " reads .lut tables"; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("lut %v: exit %d, %q; want 2 and %q", args, code, stderr, want)
		}
	}
}

// TestNotAnMMDB: a file named .mmdb that is neither an MMDB nor a .lut
// table is named as the MaxMind DB it was meant to be, not as a .lut
// table with a bad magic.
func TestNotAnMMDB(t *testing.T) {
	p := writeFile(t, filepath.Join(t.TempDir(), "GeoIP2-City.mmdb"), strings.Repeat("not a database\n", 100))
	want := p + ": not a MaxMind DB (no metadata marker in its last 128 KiB), nor a .lut table"
	for _, args := range [][]string{{"inspect", p}, {"get", p, "1.2.3.4"}, {"export", p}} {
		if _, stderr, code := run(t, args...); code != 2 || stderr != want {
			t.Errorf("%s: exit %d, %q; want %q", args[0], code, stderr, want)
		}
	}
	if stdout, stderr, code := run(t, "verify", p); code != 1 || stdout != "" || stderr != p+": FAILED: "+strings.TrimPrefix(want, p+": ")+"\n" {
		t.Errorf("verify: exit %d, %q %q", code, stdout, stderr)
	}
}
