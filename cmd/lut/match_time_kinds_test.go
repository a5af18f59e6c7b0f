package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestTimeKindsCLI runs the blocklist example of docs/matching.md (a
// suffix table bounded in time: its CSV, its commands and the output each
// shows, a get shown without output finding nothing), builds the same
// table from the section's tables.yaml, and checks for it and for a
// wildcard and a pattern table bounded in time: verify, the flags inspect
// shows, export (CSV and JSON lines) then compile with those flags giving
// the same bytes, and lut diff naming rows by key and validity.
func TestTimeKindsCLI(t *testing.T) {
	sec := readMatchingSection(t, "## A blocklist whose entries expire: suffix, wildcard and pattern tables bounded in time")
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, filepath.Join(dir, "blocklist.csv"), sec.block("csv"))
	writeFile(t, filepath.Join(dir, "tables.yaml"), sec.block("yaml"))
	if n := sec.runConsole(); n != 5 {
		t.Fatalf("%d commands in the blocklist example, want 5", n)
	}
	mustRun(t, "build", "tables.yaml", "--out", "built")
	built, _ := filepath.Glob(filepath.Join(dir, "built", "blocklist-*.lut"))
	if len(built) != 1 || !bytes.Equal(readFile(t, "blocklist.lut"), readFile(t, built[0])) {
		t.Errorf("lut build of the section's tables.yaml gives %v, not the bytes of lut compile", built)
	}

	// The three kinds: flags, round trip, verify, inspect.
	for _, c := range []struct {
		name, csv string
		flags     []string
		section   string
	}{
		{"blocklist", "", []string{"--key", "domain", "--match", "suffix", "--valid-from", "listed", "--valid-to", "expires"}, "SUFFIX"},
		{"hosts", "host,from,to,group\nweb-*,,2026-03-01T12:00:00Z,web\nweb-*,2026-03-01T12:00:00Z,,frontend\n*-db-*,2026-03-01T00:00:00Z,2026-03-01T12:00:01Z,db\n",
			[]string{"--key", "host", "--match", "wildcard", "--valid-from", "from", "--valid-to", "to", "--fold-case"}, "WILDCARD"},
		{"agents", "pattern,from,to,kind\n(?i)bot,,,bot\n^curl/,2026-03-01T00:00:00Z,1772366400,tool\n^curl/,1772366400,,blocked\n",
			[]string{"--key", "pattern", "--match", "pattern", "--valid-from", "from", "--valid-to", "to", "--overlap", "narrowest"}, "PATTERN"},
	} {
		tl := c.name + ".lut"
		if c.csv != "" {
			writeFile(t, filepath.Join(dir, c.name+".csv"), c.csv)
			mustRun(t, append(append([]string{"compile"}, c.flags...), "--out", tl, c.name+".csv")...)
		}
		mustRun(t, "verify", tl)
		shown := strings.Join(c.flags[2:], " ")
		if c.name == "hosts" {
			shown = "--match wildcard --valid-from from --valid-to to"
		}
		if out := mustRun(t, "inspect", tl); !strings.Contains(out, "match:    "+shown+"\n") || !strings.Contains(out, c.section) || !strings.Contains(out, "TIMEBOUND") {
			t.Errorf("%s: inspect does not show %q, %s and TIMEBOUND:\n%s", c.name, shown, c.section, out)
		}
		for _, format := range []string{"csv", "jsonl"} {
			exp := c.name + "-export." + format
			mustRun(t, "export", "--format", format, "-o", exp, tl)
			again := c.name + "-again.lut"
			mustRun(t, append(append([]string{"compile"}, c.flags...), "--out", again, exp)...)
			if !bytes.Equal(readFile(t, tl), readFile(t, again)) {
				t.Errorf("%s: export (%s) then compile does not give the same bytes", c.name, format)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--at", "2026-03-01T12:00:00Z", "--max-matches", "3", "hosts.lut", "WEB-DB-1"},
			`[{"host":"web-*","from":"2026-03-01T12:00:00Z","to":"","group":"frontend"},{"host":"*-db-*","from":"2026-03-01T00:00:00Z","to":"2026-03-01T12:00:01Z","group":"db"}]`},
		{[]string{"--at", "2026-03-01T11:59:59Z", "agents.lut", "curl/8.5"}, `{"pattern":"^curl/","from":"2026-03-01T00:00:00Z","to":"1772366400","kind":"tool"}`},
		{[]string{"--at", "2026-03-01T12:00:00Z", "agents.lut", "curl/8.5"}, `{"pattern":"^curl/","from":"1772366400","to":"","kind":"blocked"}`},
	} {
		if out := strings.TrimSpace(mustRun(t, append([]string{"get"}, c.args...)...)); out != c.want {
			t.Errorf("lut get %q:\n got %s\nwant %s", c.args, out, c.want)
		}
	}

	// lut diff: the parked entry's threat changed, c2's validity changed.
	writeFile(t, "blocklist-new.csv", strings.NewReplacer(",parked", ",sinkholed", "2026-03-03T00:00:00Z,botnet", "2026-03-04T00:00:00Z,botnet").Replace(sec.block("csv")))
	mustRun(t, "compile", "--key", "domain", "--match", "suffix", "--valid-from", "listed", "--valid-to", "expires", "--out", "blocklist-new.lut", "blocklist-new.csv")
	out, _, code := run(t, "diff", "--limit", "5", "--exit-code", "blocklist.lut", "blocklist-new.lut")
	want := strings.Join([]string{
		"1 added, 1 removed, 1 changed (4 rows -> 4 rows)",
		`+ "c2.tracker.io" valid [2026-03-01T00:00:00Z, 2026-03-04T00:00:00Z)`,
		`- "c2.tracker.io" valid [2026-03-01T00:00:00Z, 2026-03-03T00:00:00Z)`,
		`~ "evil-cdn.com" valid [2026-03-08T00:00:00Z, open): threat: "parked" -> "sinkholed"`,
	}, "\n")
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("diff of blocklists: exit %d\n%s\nwant\n%s", code, out, want)
	}
}
