package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestCheckConfigRefuses: --check-config refuses what the start would
// refuse, each error at its file:line:column.
func TestCheckConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "tables")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testfiles.MaxMind(t, "test-data/GeoIP2-City-Test.mmdb"), filepath.Join(tdir, "city.mmdb")); err != nil {
		t.Fatal(err)
	}
	const out = "outputs: [{type: stdout}]\n"
	for _, tc := range []struct{ name, yml, want string }{
		{"port too large", "inputs:\n  - {type: tcp, listen: \"127.0.0.1:99999\"}\n" + out,
			`c.yaml:2:25: inputs[0].listen: must be HOST:PORT with a port from 0 to 65535, not "99999"`},
		{"port not a number", "inputs:\n  - type: udp\n    listen: 0.0.0.0:5514x\n" + out,
			`c.yaml:3:13: inputs[0].listen: must be HOST:PORT with a port from 0 to 65535, not "5514x"`},
		{"http port", "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\n" + out + "http:\n  listen: 127.0.0.1:70000\n",
			`c.yaml:4:11: http.listen: must be HOST:PORT with a port from 0 to 65535, not "70000"`},
		{"memcached port", "tables: {path: tables}\nmemcached: {listen: \"127.0.0.1:-1\"}\n",
			`c.yaml:2:21: memcached.listen: must be HOST:PORT with a port from 0 to 65535, not "-1"`},
		{"indentation", "inputs:\n  - type: tcp\n    listen: 127.0.0.1:0\n   format: json\n" + out,
			`c.yaml:4: not valid YAML: did not find expected '-' indicator`},
		{"tls cert unreadable", "inputs:\n  - type: tcp\n    listen: 127.0.0.1:0\n    tls: {cert_file: nope.pem, key_file: nope.key}\n" + out,
			`c.yaml:4:22: inputs[0].tls.cert_file: open ` + filepath.Join(dir, "nope.pem")},
		{"mmdb path absent", "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\n" + out + "tables: {path: tables}\nrules:\n  - table: city\n    field: src\n    mmdb_fields:\n      - city.name.en\n      - country.iso_code\n",
			`c.yaml:8:9: rules[0].mmdb_fields[0]: no record of table "city" has the path "city.name.en" (close: city.names.en`},
		{"json field, syslog input", "inputs: [{type: udp, listen: \"127.0.0.1:0\"}]\n" + out + "tables: {path: tables}\nrules:\n  - {table: city, field: json.src.ip, mmdb_fields: [country.iso_code]}\n",
			`c.yaml:5:26: rules[0].field: "json.src.ip" is only set by a json input, and no input reads json`},
		{"field of another rule's target", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "tables: {path: tables}\nrules:\n" +
			"  - {name: geo, table: city, field: src, target: geo, mmdb_fields: [country.iso_code]}\n  - {table: city, field: geo.ip, mmdb_fields: [country.iso_code]}\n",
			`c.yaml:6:26: rules[1].field: "geo.ip": rule "geo" writes no field "ip" under its target geo`},
		{"field of a later rule's target", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "tables: {path: tables}\nrules:\n" +
			"  - {table: city, field: geo.country.iso_code, mmdb_fields: [country.iso_code]}\n  - {name: geo, table: city, field: src, target: geo, mmdb_fields: [country.iso_code]}\n",
			`c.yaml:5:26: rules[0].field: "geo.country.iso_code" is under the target of rule "geo" (geo), which runs later: a rule reads only what earlier rules write`},
		{"when of a later rule", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "tables: {path: tables}\nrules:\n" +
			"  - {table: city, field: src, mmdb_fields: [country.iso_code], when: {missed: geo}}\n  - {name: geo, table: city, field: src, target: geo, mmdb_fields: [country.iso_code]}\n",
			`c.yaml:5:70: rules[0].when: rule "geo" runs at or after this one: a condition reads only the result of an earlier rule`},
		{"when with two tests", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "tables: {path: tables}\nrules:\n" +
			"  - table: city\n    field: src\n    mmdb_fields: [country.iso_code]\n    when:\n      field: action\n      equals: deny\n      exists: true\n",
			`c.yaml:9:7: rules[0].when: has equals and exists: one test per condition (combine them with all or any)`},
		{"when in_cidr not a network", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "tables: {path: tables}\nrules:\n" +
			"  - table: city\n    field: src\n    mmdb_fields: [country.iso_code]\n    when:\n      any:\n        - {field: src, in_cidr: [10.0.0.0/33]}\n",
			`c.yaml:10:33: rules[0].when.any[0].in_cidr: "10.0.0.0/33" is not a network`},
		{"event_time", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "pipeline:\n  event_time: json\n",
			`c.yaml:4:15: pipeline.event_time: "json": want syslog, receive or json.PATH`},
		{"each of a kv field", "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n" + out + "tables: {path: tables}\nrules:\n" +
			"  - {table: city, field: kv.ips, mmdb_fields: [country.iso_code], each: true}\n",
			`c.yaml:5:73: rules[0].each: each: field "kv.ips" is not a JSON member (json.PATH, or a bare name for JSON input)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "c.yaml")
			writeFile(t, p, tc.yml)
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config", p, "--check-config"}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), p[:len(p)-len("c.yaml")]+tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant %s", code, stdout.String(), stderr.String(), tc.want)
			}
		})
	}
	// A chained rule reading what an earlier one writes passes.
	writeFile(t, filepath.Join(dir, "c.yaml"), "inputs: [{type: tcp, listen: \"127.0.0.1:0\", format: json}]\n"+out+"tables: {path: tables}\nrules:\n"+
		"  - {name: geo, table: city, field: src, target: geo, mmdb_fields: {country.iso_code: iso}}\n"+
		"  - {name: again, table: city, field: geo.iso, target: again, mmdb_fields: [country.iso_code], when: {matched: geo}}\n")
	{
		var stdout, stderr bytes.Buffer
		if code := run([]string{"--config", filepath.Join(dir, "c.yaml"), "--check-config"}, &stdout, &stderr); code != 0 {
			t.Fatalf("chained rules: exit %d: %s", code, stderr.String())
		}
	}
	// The same table with the paths its records have passes.
	p := filepath.Join(dir, "c.yaml")
	writeFile(t, p, "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\n"+out+"tables: {path: tables}\nrules:\n  - {table: city, field: src, mmdb_fields: [city.names.en, country.iso_code, subdivisions.-1.iso_code]}\n")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--config", p, "--check-config"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestCheckConfigFIFOManifest: --check-config with a tables directory
// whose MANIFEST.json is a named pipe (no writer) fails at once with
// "not a regular file" and the manifest's path; it blocked in the read.
func TestCheckConfigFIFOManifest(t *testing.T) {
	tdir := filepath.Join(t.TempDir(), "fdir")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(tdir, "MANIFEST.json")
	if err := syscall.Mkfifo(mp, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--tables", tdir, "--http", "127.0.0.1:0", "--check-config"}, &stdout, &stderr)
	}()
	select {
	case code := <-done:
		if want := mp + ": reading the manifest: not a regular file (a named pipe)"; code != 2 || !strings.Contains(stderr.String(), want) {
			t.Fatalf("exit %d, stderr %q, want exit 2 and %q", code, stderr.String(), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--check-config still running after 10 s")
	}
}
