package enrichd

import (
	"strings"
	"testing"
)

// configErrors parses yml and returns its errors, one per line.
func configErrors(t *testing.T, yml string) []string {
	t.Helper()
	_, err := ParseConfig("e.yaml", []byte(yml))
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// TestConfigOneErrorEach: a wrong value is reported once, where it is
// written; it does not also make the checks that depend on it fail.
func TestConfigOneErrorEach(t *testing.T) {
	in := "inputs: [{type: file, path: x}]\n"
	out := "outputs: [{type: stdout}]\n"
	for _, tc := range []struct{ yml, want string }{
		{in + "outputs:\n  - {type: fiel, path: x}\n", `e.yaml:3:12: outputs[0].type: must be one of file, relp, stdout, tcp, not "fiel"`},
		{"inputs:\n  - {type: tpc, listen: \"x:1\"}\n" + out, `e.yaml:2:12: inputs[0].type: must be one of file, relp, tcp, udp, not "tpc"`},
		{"inputs:\n  - {type: tcp, listen: [x]}\n" + out, `e.yaml:2:25: inputs[0].listen: must be a string`},
		{"inputs:\n  - {type: tcp, listen: nohost}\n" + out, `e.yaml:2:25: inputs[0].listen: must be HOST:PORT: address nohost: missing port in address`},
		{"inputs:\n  - {type: tcp, listen: \"x:1\", format: sylog}\n" + out, `e.yaml:2:40: inputs[0].format: must be one of syslog, json, raw, not "sylog"`},
		{"inputs:\n  - {type: file, listen: \"x:1\", path: y}\n" + out, `e.yaml:2:26: inputs[0].listen: only for relp, tcp and udp inputs`},
		{"inputs:\n  - {type: file, path: y, read_buffer: 1}\n" + out, `e.yaml:2:40: inputs[0].read_buffer: only for a udp input`},
		{in + "outputs:\n  - {type: file, path: \"-\"}\n", `e.yaml:3:24: outputs[0].path: "-" is not a file an output writes: for stdout use type: stdout`},
		{"inputs:\n  - {type: file}\n" + out, `e.yaml:2:5: inputs[0].path: required for a file input (the file to read; "-" is stdin)`},
		{"inputs:\n  - {type: tcp, listen: \"x:1\", max_connections: 0}\n" + out, `e.yaml:2:49: inputs[0].max_connections: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_connections out for the default)`},
		{in + "outputs:\n  - {type: tcp}\n", `e.yaml:3:5: outputs[0].address: required for a tcp output (HOST:PORT)`},
		{in + "outputs:\n  - {type: stdout, path: x}\n", `e.yaml:3:26: outputs[0].path: only for a file output`},
		{in + out + "tables: {path: d, verify: ful}\n", `e.yaml:3:27: tables.verify: must be one of full, digest, none, not "ful"`},
		{in + out + "pipeline: {kv_fields: some}\n", `e.yaml:3:23: pipeline.kv_fields: must be one of used, all, none, not "some"`},
		{in + out + "pipeline: {workers: -1}\n", `e.yaml:3:21: pipeline.workers: must be 0 (GOMAXPROCS) to 1024, not -1`},
		{in + out + "log: {level: loud}\n", `e.yaml:3:14: log.level: must be one of debug, info, warn, error, not "loud"`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: '', field: a}\n", `e.yaml:5:13: rules[0].table: must not be empty`},
		{in + out + "tables: {path: d}\nrules:\n  - {field: a}\n", `e.yaml:5:5: rules[0].table: required`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, fields: []}\n", `e.yaml:5:24: rules[0].fields: the list is empty`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, field: a, columns: {a: ''}}\n", `e.yaml:5:39: rules[0].columns.a: must not be empty`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, field: a, on_miss: [x]}\n", `e.yaml:5:35: rules[0].on_miss: must be a mapping`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, field: a, each: true, max_matches: 3}\n", `e.yaml:5:51: rules[0].max_matches: an each rule writes one result per element; it cannot have several matches`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, field: a, target: x, max_matches: 0}\n", `e.yaml:5:50: rules[0].max_matches: must be an integer from 1 to 1000`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, field: a, target: x, max_matches: 2, mmdb_fields: [city]}\n", `e.yaml:5:50: rules[0].max_matches: an .mmdb table answers one network (the longest prefix); several matches need a .lut table`},
		{in + out + "tables: {path: d}\nmemcached: {listen: \"127.0.0.1:1\", max_matches: 0}\n", `e.yaml:4:49: memcached.max_matches: must be from 1 to 1000, not 0`},
		{in + out + "tables: {path: d}\nrules:\n  - {table: t, field: a, mmdb_fields: {a: b}}\n  - {table: t, field: b, name: t}\n", `e.yaml:6:32: rules[1].name: rule name "t" is used twice`},
		{in + out + "http: {listen: \"127.0.0.1:1\", token: a, token_file: /dev/null}\n", `e.yaml:3:7: http: give token or token_file, not both`},
		{"inputs: {type: tcp}\n" + out, `e.yaml:1:9: inputs: must be a list`},
		{in + out + "tables: {path: \"https://h/t/MANIFEST.json\"}\n", `e.yaml:3:9: tables.cache_dir: required: a remote manifest is fetched into a local cache directory (enrichd --tables-cache DIR)`},
		{in + out + "tables: {path: d, cache_dir: c}\n", `e.yaml:3:30: tables.cache_dir: applies to a remote manifest only (tables.path is d)`},
		{in + out + "tables: {path: \"s3://b/p/\", cache_dir: c, token: x}\n", `e.yaml:3:50: tables.token: applies to an http:// or https:// manifest (an s3:// store takes AWS credentials)`},
		{in + out + "tables: {path: \"https://h/\", cache_dir: c, cert_file: x}\n", `e.yaml:3:55: tables.cert_file: a client certificate needs both cert_file and key_file`},
		{in + out + "tables: {path: \"https://h/\", cache_dir: c, headers: {}}\n", `e.yaml:3:53: tables.headers: must not be empty`},
	} {
		errs := configErrors(t, tc.yml)
		if len(errs) != 1 || errs[0] != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.yml, errs, tc.want)
		}
	}
}

// TestConfigEveryError: every problem of a file is reported at once,
// sorted by position.
func TestConfigEveryError(t *testing.T) {
	errs := configErrors(t, `
inputs:
  - {type: tcp}
  - {type: udp, listen: "x:1", bogus: 1}
outputs:
  - {type: file}
pipeline: {flush_interval: soon}
`)
	want := []string{
		"e.yaml:3:5: inputs[0].listen: required for a tcp input (HOST:PORT)",
		"e.yaml:4:32: inputs[1].bogus: unknown field (known: format, idle_timeout, limits, listen, max_connections, max_message_size, name, path, read_buffer, tls, type)",
		`e.yaml:6:5: outputs[0].path: required for a file output (the file to append to; for stdout use type: stdout)`,
		`e.yaml:7:28: pipeline.flush_interval: must be a duration such as 5ms, 30s or 10m, not "soon"`,
	}
	if strings.Join(errs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
}

// TestConfigDefaults: a configuration made in code gets the same defaults
// as one read from a file, in one place.
func TestConfigDefaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inputs = []InputConfig{{Type: "tcp", Listen: "127.0.0.1:0"}, {Type: "file", Path: "-"}}
	cfg.Outputs = []OutputConfig{{Type: "tcp", Address: "127.0.0.1:1"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ParseConfig("e.yaml", []byte("inputs: [{type: tcp, listen: \"127.0.0.1:0\"}, {type: file, path: \"-\"}]\noutputs: [{type: tcp, address: \"127.0.0.1:1\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range cfg.Inputs {
		f := fromFile.Inputs[i]
		if in.Name != f.Name || in.Format != f.Format || in.MaxMessageSize != f.MaxMessageSize {
			t.Errorf("input %d: code %+v, file %+v", i, in, f)
		}
	}
	if tc := cfg.Inputs[0].Settings.(*TCPInputConfig); tc.Limits.MaxConnections != DefaultMaxConnections || cfg.Inputs[1].Format != FormatRaw || cfg.Inputs[0].Format != FormatSyslog {
		t.Errorf("input defaults: %+v %+v", tc, cfg.Inputs)
	}
	if o := cfg.Outputs[0]; o.BufferSize != DefaultOutputBuffer || o.Name != "tcp:127.0.0.1:1" || o.Name != fromFile.Outputs[0].Name {
		t.Errorf("output defaults: %+v", o)
	}
	if cfg.Pipeline.KVFields != KVUsed || !cfg.Pipeline.StructuredData || cfg.Tables.Verify != VerifyDigest || cfg.ShutdownTimeout != DefaultShutdownTimeout ||
		!fromFile.Pipeline.StructuredData || fromFile.DrainReadGrace != DefaultDrainReadGrace {
		t.Errorf("section defaults: %+v %+v", cfg.Pipeline, fromFile.Pipeline)
	}
}

// TestConfigFlagErrors: values set from flags are checked as the file's
// are, and their errors name the flag.
func TestConfigFlagErrors(t *testing.T) {
	cfg := DefaultConfig()
	in := InputConfig{Type: "tcp", Listen: "nohost", Format: "sylog"}
	in.At.SetFlag("", "--tcp")
	in.At.SetFlag("format", "--format")
	cfg.Inputs = []InputConfig{in}
	cfg.Outputs = []OutputConfig{{Type: "stdout"}}
	cfg.Tables.Verify = "ful"
	cfg.Tables.At.SetFlag("verify", "--verify")
	err := cfg.Validate()
	want := `--tcp: must be HOST:PORT: address nohost: missing port in address` + "\n" +
		`--format: must be one of syslog, json, raw, not "sylog"` + "\n" +
		`--verify: must be one of full, digest, none, not "ful"`
	if err == nil || sortLines(err.Error()) != sortLines(want) {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}

func sortLines(s string) string {
	l := strings.Split(s, "\n")
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j] < l[i] {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return strings.Join(l, "\n")
}

// TestConfigExamples: the example configurations parse (the Kafka one
// in package kafka, which registers the type).
func TestConfigExamples(t *testing.T) {
	for _, f := range []string{"../examples/enrichd.yaml"} {
		if _, err := LoadConfig(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
