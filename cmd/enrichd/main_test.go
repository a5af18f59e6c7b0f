package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	writeFile(t, good, "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout}]\n")
	var out, errb bytes.Buffer
	if code := run([]string{"--config", good, "--check-config"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "ok") {
		t.Fatalf("good config: exit %d, %s %s", code, out.String(), errb.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs:\n  - {type: file}\n")
	out.Reset()
	errb.Reset()
	if code := run([]string{"--config", bad, "--check-config"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "bad.yaml:3:5: outputs[0].path") {
		t.Fatalf("bad config: exit %d, %q", code, errb.String())
	}
	// Flags complete a file without inputs and outputs.
	partial := filepath.Join(dir, "partial.yaml")
	writeFile(t, partial, "pipeline: {batch_size: 64}\n")
	errb.Reset()
	if code := run([]string{"--config", partial, "--tcp", "127.0.0.1:0", "--out", "-", "--check-config"}, &out, &errb); code != 0 {
		t.Fatalf("partial config with flags: exit %d, %s", code, errb.String())
	}
}

// TestRunFile runs the command on a file input: it exits 0 once the
// file is read, having written every line.
func TestRunFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	writeFile(t, in, "<13>1 2026-11-30T06:16:21Z h app - - - a=1\nno pri\n")
	outp := filepath.Join(dir, "out.json")
	var out, errb bytes.Buffer
	if code := run([]string{"--file", in, "--format", "syslog", "--out", outp}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(outp)
	if strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"_malformed"`) {
		t.Fatalf("output:\n%s", b)
	}
}

// TestFlagValues: flag values are checked as the same settings in a file
// are, and the errors name the flags.
func TestFlagValues(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tcp", "127.0.0.1:0", "--format", "sylog", "--out", "-"}, `--format: must be one of syslog, json, raw, not "sylog"`},
		{[]string{"--tcp", "127.0.0.1:0", "--out", "-", "--tables", dir, "--verify", "ful"}, `--verify: must be one of full, digest, none, not "ful"`},
		{[]string{"--tcp", "nohost", "--out", "-"}, `--tcp: must be HOST:PORT`},
		{[]string{"--format", "json", "--out", "-"}, `--format: only with --tcp, --udp or --file`},
		{[]string{"--file", "-", "--out", "-", "--workers", "-2"}, `--workers: must be 0 (GOMAXPROCS) to 1024, not -2`},
		{[]string{"--file", "-", "--out", "-", "--http", "9514"}, `--http: must be HOST:PORT`},
	} {
		var out, errb bytes.Buffer
		args := append(tc.args, "--check-config")
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	// A file's error and a flag's are reported together.
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "outputs:\n  - {type: fiel}\n")
	var out, errb bytes.Buffer
	code := run([]string{"--config", bad, "--tcp", "127.0.0.1:0", "--format", "sylog", "--check-config"}, &out, &errb)
	if code != 2 || errb.String() != "--format: must be one of syslog, json, raw, not \"sylog\"\n"+
		bad+":2:12: outputs[0].type: must be one of file, kafka, relp, stdout, tcp, not \"fiel\"\n" {
		t.Errorf("exit %d, %q", code, errb.String())
	}
}

// TestCheckConfigTables: --check-config opens the tables present and
// reports, where the configuration names them, a rule's table that is not
// there and columns its table lacks.
func TestCheckConfigTables(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "tables")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewCSVReader(strings.NewReader("Index,Email,Name\n1,a@b,Ann\n"), "c.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(tdir, "customers.lut"), compile.Options{Key: []string{"Index"}}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "enrichd.yaml")
	write := func(rules string) {
		writeFile(t, cfgPath, "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout}]\ntables: {path: tables}\n"+
			"memcached: {listen: \"127.0.0.1:0\", default_table: customers, value_column: Emial}\nrules:\n"+rules)
	}
	write(`  - {table: custmers, field: cust}
  - table: customers
    field: cust
    columns: [Name, {Emial: email}, Index]
  - {name: geo, table: customers, field: src, mmdb_fields: {country.iso_code: cc}}
`)
	var out, errb bytes.Buffer
	code := run([]string{"--config", cfgPath, "--check-config"}, &out, &errb)
	want := []string{
		cfgPath + `:4:76: memcached.value_column: table "customers" has no column "Emial" (its columns: Index, Email, Name)`,
		cfgPath + `:6:13: rules[0].table: no table "custmers" in ` + tdir + ` (it holds: customers)`,
		cfgPath + `:9:22: rules[1].columns[1]: table "customers" has no column "Emial" (its columns: Index, Email, Name)`,
		cfgPath + `:10:60: rules[2].mmdb_fields: table "customers" is a .lut table: name its columns (columns), not mmdb_fields`,
	}
	if code != 2 || errb.String() != strings.Join(want, "\n")+"\n" {
		t.Fatalf("exit %d:\n%s\nwant\n%s", code, errb.String(), strings.Join(want, "\n"))
	}
	// Right, it says what it checked.
	write("  - {table: customers, field: cust, columns: [Email]}\n")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgPath, strings.Replace(string(b), "Emial", "Email", 1))
	out.Reset()
	errb.Reset()
	if code := run([]string{"--config", cfgPath, "--check-config"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "rules checked against the tables in "+tdir) {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	// Tables not there yet: nothing to check them against, and it says so.
	os.RemoveAll(tdir)
	out.Reset()
	if code := run([]string{"--config", cfgPath, "--check-config"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "does not exist yet: rules not checked") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// TestCheckConfigRemoteTables: a remote tables.path is checked as a
// setting (its cache directory is required) but not fetched.
func TestCheckConfigRemoteTables(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"--tcp", "127.0.0.1:0", "--out", "-", "--tables", "https://user:secret@127.0.0.1:1/t/MANIFEST.json", "--check-config"}
	if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--tables-cache") || strings.Contains(errb.String(), "secret") {
		t.Fatalf("without a cache directory: exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	args = append(args, "--tables-cache", t.TempDir())
	if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "remote tables: rules are checked against them when the daemon starts") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// writeFile writes content to path.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHelp: --help teaches with examples, names the reference of the
// configuration's keys, writes its flags with two dashes as the docs do,
// and ends its last line; usage errors exit 2.
func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	h := out.String()
	for _, want := range []string{"Examples:\n  enrichd --config ", "--check-config", "--tables PATH", "--format FORMAT", "Exit status:", "docs/config.md lists every key"} {
		if !strings.Contains(h, want) {
			t.Errorf("help lacks %q:\n%s", want, h)
		}
	}
	if !strings.HasSuffix(h, "\n") {
		t.Errorf("help does not end with a newline")
	}
	if m := regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+`).FindString(h); m != "" {
		t.Errorf("a flag written with one dash: %q", m)
	}
	out.Reset()
	if code := run([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "enrichd ") || !strings.HasSuffix(out.String(), "\n") {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	for _, args := range [][]string{{"--nosuch"}, {"-config", "x"}, {"extra"}} {
		errb.Reset()
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "enrichd --help") {
			t.Errorf("%v: exit %d, %q", args, code, errb.String())
		}
	}
}

// TestStartFails: a daemon that cannot start (its port is taken) exits 1.
func TestStartFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"--tcp", ln.Addr().String(), "--out", "-"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "address already in use") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
