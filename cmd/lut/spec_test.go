package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/tables"
)

// TestFlagsAndTablesYAMLAgree: "lut compile" flags and a tables.yaml
// entry decode into the same option specs, so the same options give the
// same bytes either way, for a .lut and an .mmdb table.
func TestFlagsAndTablesYAMLAgree(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "svc.txt"), "host;port;owner\nWeb01;443;alice\nweb01;443;bob\nweb02;80;carol\n")
	writeFile(t, filepath.Join(dir, "sites.csv"), "s|e|site|n\n10.0.0.0|10.0.255.255|hq|7\n2001:db8::|2001:db8::ffff|hq6|8\n")
	writeFile(t, filepath.Join(dir, "bad.txt"), "10.0.3.0/24\n")
	writeFile(t, filepath.Join(dir, "tables.yaml"), `tables:
  - name: svc
    key: [host, port]
    columns: [host, port, owner]
    fold_case: true
    on_duplicate: last
    sources: [{path: svc.txt, format: csv, delimiter: ";"}]
  - name: sites
    kind: mmdb
    profile: city
    database_type: GeoLite2-City
    record_size: 24
    default_location: [52.5, 13.4]
    sources:
      - path: sites.csv
        start_column: s
        end_column: e
        delimiter: "|"
        fields: ["city.names.en=site", "x_internal.n:uint32=n"]
      - path: bad.txt
        set: ["threat.ioc:bool=true", "threat.list=bad"]
        merge: deep
`)
	dist := filepath.Join(dir, "dist")
	mustRun(t, "build", filepath.Join(dir, "tables.yaml"), "--out", dist, "-q")
	m, err := tables.ReadManifest(filepath.Join(dist, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	lut, mm := filepath.Join(dir, "svc.lut"), filepath.Join(dir, "sites.mmdb")
	mustRun(t, "compile", "--out", lut, "--key", "host,port", "--columns", "host,port,owner", "--fold-case",
		"--on-duplicate", "last", "--format", "csv", "--delimiter", ";", filepath.Join(dir, "svc.txt"))
	mustRun(t, "compile", "--out", mm, "--profile", "city", "--database-type", "GeoLite2-City", "--record-size", "24",
		"--default-location", "52.5,13.4", "--range", "s,e", "--delimiter", "|",
		"--field", "city.names.en=site", "--field", "x_internal.n:uint32=n", filepath.Join(dir, "sites.csv"),
		"--ioc", "bad="+filepath.Join(dir, "bad.txt"), "--ioc-set", "threat.ioc:bool=true", "--ioc-set", "threat.list=bad")
	for name, file := range map[string]string{"svc": lut, "sites": mm} {
		built, _ := os.ReadFile(filepath.Join(dist, m.Table(name).File))
		compiled, _ := os.ReadFile(file)
		if len(built) == 0 || !bytes.Equal(built, compiled) {
			t.Errorf("%s: lut build and lut compile wrote different files (%d and %d bytes)", name, len(built), len(compiled))
		}
	}
}

// TestCompileFlagErrors: the flags are checked by the specs' own checks,
// and each problem names its flag.
func TestCompileFlagErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "n.csv"), "cidr,x\n10.0.0.0/8,a\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", filepath.Join(dir, "t.lut"), src}, "compile: --key: missing"},
		{[]string{"--out", filepath.Join(dir, "t.lut"), "--key", "cidr", "--columns", "x,x", src}, `compile: --columns: column "x" is listed twice`},
		{[]string{"--out", filepath.Join(dir, "t.lut"), "--key", "cidr", "--sqlite-table", "a", "--sqlite-query", "b", src}, "give sqlite_table or sqlite_query, not both"},
		{[]string{"--out", filepath.Join(dir, "t.mmdb"), "--network", "cidr", "--record-size", "30", src}, "compile: --record-size: must be 24, 28 or 32, not 30"},
		{[]string{"--out", filepath.Join(dir, "t.mmdb"), "--network", "cidr", "--range-family", "5", src}, "compile: --range-family: must be 4 or 6, not 5"},
		{[]string{"--out", filepath.Join(dir, "t.mmdb"), "--network", "cidr", "--merge", "sideways", src}, `unknown merge mode "sideways"`},
		{[]string{"--out", filepath.Join(dir, "t.mmdb"), "--network", "cidr", "--delimiter", "ab", src}, `delimiter "ab" must be a single character`},
	} {
		_, errs, code := run(t, append([]string{"compile"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
