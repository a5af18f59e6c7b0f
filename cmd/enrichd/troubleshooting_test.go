package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTroubleshootingMessages checks that every log message quoted in the
// first column of docs/troubleshooting.md's tables is a string literal in
// the code of enrichd (the non-test Go files of enrichd/, tables/ and
// cmd/enrichd/), so that the page cannot name a line enrichd no longer
// prints.
func TestTroubleshootingMessages(t *testing.T) {
	doc, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, dir := range []string{"../../enrichd", "../../tables", "."} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				code.Write(b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	src := code.String()
	msgs := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1)
	if len(msgs) < 20 {
		t.Fatalf("only %d messages found in docs/troubleshooting.md", len(msgs))
	}
	for _, m := range msgs {
		if !regexp.MustCompile(`\.(Debug|Info|Warn|Error)\("` + regexp.QuoteMeta(m[1]) + `"`).MatchString(src) {
			t.Errorf("docs/troubleshooting.md quotes %q, which no log call of enrichd prints", m[1])
		}
	}
}
