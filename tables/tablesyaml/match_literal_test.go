package tablesyaml

import (
	"strings"
	"testing"
)

// TestConfigMatchLiteral: match: wildcard and match: pattern are kinds of
// tables.yaml too; a pattern table refuses fold_case at its line.
func TestConfigMatchLiteral(t *testing.T) {
	for _, kind := range []string{"wildcard", "pattern"} {
		cfg, err := ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: hosts\n    sources: [h.csv]\n    key: host\n    match: "+kind+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Tables[0].LUT.Match; got != kind {
			t.Errorf("match: %q, want %q", got, kind)
		}
	}
	_, err := ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: ua\n    sources: [ua.csv]\n    key: pattern\n    match: pattern\n    fold_case: true\n"))
	if err == nil || !strings.Contains(err.Error(), "tables.yaml:7:") || !strings.Contains(err.Error(), "(?i)") {
		t.Errorf("match: pattern with fold_case: %v", err)
	}
}
