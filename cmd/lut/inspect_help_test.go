package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectHelpExamples: lut inspect --help shows it on a .lut table
// and on an .mmdb file, and each example runs on such a file: the text
// form with the fields the help lists, the --json form with the key its
// jq filter reads.
func TestInspectHelpExamples(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "customers.csv"), "Index,Name\n1,Ann\n2,Bob\n")
	files := map[string]string{"customers.lut": filepath.Join(dir, "customers.lut"), "assets.mmdb": filepath.Join(dir, "assets.mmdb")}
	mustRun(t, "compile", "--key", "Index", "--out", files["customers.lut"], csv)
	nets := writeFile(t, filepath.Join(dir, "assets.csv"), "network,site\n10.20.0.0/16,hq\n")
	mustRun(t, "compile", "--network", "network", "--out", files["assets.mmdb"], nets)
	fields := map[string][]string{
		"customers.lut": {"rows:", "columns:", "key:", "match:", "built:", "source:", "hash:", "sections:"},
		"assets.mmdb": {"format:", "database type:", "ip version:", "record size:", "node count:", "build time:",
			"languages:", "description:", "ipv4 aliases:", "size:"},
	}
	ran := map[string]bool{}
	for _, line := range strings.Split(newInspectCommand().Example, "\n") {
		cmdline, filter, piped := strings.Cut(strings.TrimSpace(line), "|")
		args := strings.Fields(cmdline)[2:] // after "lut inspect"
		name := args[len(args)-1]
		path, ok := files[name]
		if !ok {
			t.Fatalf("example %q inspects %s, not a file of the test", line, name)
		}
		args[len(args)-1] = path
		out := mustRun(t, append([]string{"inspect"}, args...)...)
		if !piped {
			for _, f := range fields[name] {
				if !strings.Contains(out, "\n"+f) {
					t.Errorf("%q: no %q in\n%s", line, f, out)
				}
			}
			ran[name] = true
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		key := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(filter), "jq "), ".")
		if _, ok := obj[key]; !ok {
			t.Errorf("%q: no %q in %s", line, key, out)
		}
		ran[name+" --json"] = true
	}
	for _, want := range []string{"customers.lut", "customers.lut --json", "assets.mmdb", "assets.mmdb --json"} {
		if !ran[want] {
			t.Errorf("lut inspect --help has no example of %s", want)
		}
	}
}
