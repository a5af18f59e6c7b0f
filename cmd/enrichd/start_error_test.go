package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartErrorPlaced: what the start cannot do with an address or a
// path the configuration gives (a port another process listens on, a
// file output in a directory that does not exist, a table directory that
// does not exist) fails the start with exit status 1 and one error, at
// the file, line and column of the key that gave it, or at the flag that
// set it, saying what to do. An error of an input or output that is not
// about its address or path (a file input given a directory) is placed
// at the input, which it names.
func TestStartErrorPlaced(t *testing.T) {
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	inUse := fmt.Sprintf("listen tcp %s: bind: address already in use (another process, or another enrichd, listens there: stop it, or choose another address)", addr)
	tdir := filepath.Join(dir, "tables")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	cfgPath := filepath.Join(dir, "c.yaml")
	const in, out = "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\n", "outputs: [{type: stdout}]\n"
	for _, tc := range []struct {
		name, yml string
		args      []string
		want      string
	}{
		{"input port taken", "inputs:\n  - {type: tcp, listen: \"" + addr + "\"}\n" + out, nil,
			cfgPath + ":2:25: inputs[0].listen: " + inUse},
		{"http port taken", in + out + "http:\n  listen: " + addr + "\n", nil,
			cfgPath + ":4:11: http.listen: " + inUse},
		{"memcached port taken", in + out + "tables: {path: tables}\nmemcached: {listen: \"" + addr + "\"}\n", nil,
			cfgPath + ":4:21: memcached.listen: " + inUse},
		{"--tcp port taken", "", []string{"--tcp", addr, "--out", "-"},
			"--tcp: " + inUse},
		{"output directory missing", in + "outputs:\n  - type: file\n    path: missing/out.json\n", nil,
			cfgPath + ":4:11: outputs[0].path: open " + filepath.Join(missing, "out.json") + ": no such file or directory (its directory does not exist: create it, or change the path)"},
		{"--out directory missing", "", []string{"--tcp", "127.0.0.1:0", "--out", filepath.Join(missing, "out.json")},
			"--out: open " + filepath.Join(missing, "out.json") + ": no such file or directory (its directory does not exist: create it, or change the path)"},
		{"file input a directory", "inputs:\n  - {type: file, path: tables}\n" + out, nil,
			cfgPath + ":2:5: inputs[0]: input file:" + tdir + ": " + tdir + " is a directory: a file input reads one file (or - for stdin)"},
		{"tables directory missing", in + out + "tables: {path: missing}\n", nil,
			cfgPath + ":3:16: tables.path: stat " + missing + ": no such file or directory (build the tables there with lut build, or change the path)"},
		{"--tables directory missing", "", []string{"--tcp", "127.0.0.1:0", "--out", "-", "--tables", missing},
			"--tables: stat " + missing + ": no such file or directory (build the tables there with lut build, or change the path)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yml != "" {
				writeFile(t, cfgPath, tc.yml)
				args = []string{"--config", cfgPath}
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, stderr.String())
			}
			var failed []string
			for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				var rec struct{ Level, Msg, Err string }
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if rec.Msg == "start failed" {
					if rec.Level != "ERROR" {
						t.Errorf("start failed at level %s", rec.Level)
					}
					failed = append(failed, rec.Err)
				}
			}
			if len(failed) != 1 || failed[0] != tc.want {
				t.Fatalf("start failed with %q\nwant %q\nstderr:\n%s", failed, tc.want, stderr.String())
			}
		})
	}
}
