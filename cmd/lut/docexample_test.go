package main

import (
	"os"
	"strings"
	"testing"
)

// matchingSection is a section of docs/matching.md whose example the
// tests run: its text, from its heading to the next section's.
type matchingSection struct {
	t       testing.TB
	heading string
	text    string
}

// readMatchingSection returns the section of docs/matching.md under
// heading (a line such as "## Wildcard: host groups").
func readMatchingSection(t testing.TB, heading string) matchingSection {
	t.Helper()
	doc, err := os.ReadFile("../../docs/matching.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(doc), heading+"\n")
	if !ok {
		t.Fatalf("docs/matching.md has no %q", heading)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	return matchingSection{t, heading, text}
}

// block returns the body of the section's first code block in lang.
func (s matchingSection) block(lang string) string {
	s.t.Helper()
	_, rest, ok := strings.Cut(s.text, "```"+lang+"\n")
	if !ok {
		s.t.Fatalf("%s has no %s block", s.heading, lang)
	}
	body, _, _ := strings.Cut(rest, "```")
	return body
}

// runConsole runs the section's console block in the current directory:
// each "$ lut ..." line is a command (arguments in single quotes kept
// whole), the lines after it the output it shows. A command must succeed
// and a get print what is shown, but a get shown without output must
// find nothing (exit 1, no output). It returns the number of commands.
func (s matchingSection) runConsole() int {
	t := s.t
	t.Helper()
	type step struct{ args, want []string }
	var steps []step
	for _, line := range strings.Split(strings.TrimSpace(s.block("console")), "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ lut "); ok {
			steps = append(steps, step{args: shellWords(cmd)})
		} else if len(steps) > 0 {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		} else {
			t.Fatalf("%s: the console block starts with %q, not a command", s.heading, line)
		}
	}
	for _, st := range steps {
		out, errs, code := run(t, st.args...)
		got, want := strings.TrimSpace(out), strings.Join(st.want, "\n")
		if st.args[0] == "get" && len(st.want) == 0 {
			if code != 1 || got != "" {
				t.Errorf("lut %q: exit %d, %q; want exit 1 (not found)", st.args, code, out)
			}
			continue
		}
		if code != 0 || (st.args[0] == "get" && got != want) {
			t.Errorf("lut %q: exit %d, output %q, want %q: %s", st.args, code, got, want, errs)
		}
	}
	return len(steps)
}
