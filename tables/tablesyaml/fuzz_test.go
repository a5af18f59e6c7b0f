package tablesyaml

import (
	"errors"
	"os"
	"testing"
)

// FuzzParseConfig checks that no tables.yaml makes the parser panic, and
// that every error it reports names the file.
func FuzzParseConfig(f *testing.F) {
	if b, err := os.ReadFile("../../examples/tables.yaml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"tables:\n  - {name: a, key: k, sources: [a.csv]}\n",
		"tables:\n  - name: m\n    kind: mmdb\n    default_location: [1, x]\n    sources: [{path: r.csv, fields: [a=b, 'c:nope=d'], merge: deep}]\n",
		"tables: [{name: x, kind: .MMDB, sources: ~}, 3, {name: x}]\n",
		"version: 1\ntables:\n  - &a {name: a, key: k, sources: [*a]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("t.yaml", data)
		if err == nil {
			if cfg == nil || len(cfg.Tables) == 0 {
				t.Fatal("no error and no tables")
			}
			return
		}
		var es ConfigErrors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("error %v is not a ConfigErrors", err)
		}
		for _, e := range es {
			if e.File != "t.yaml" {
				t.Fatalf("error %q does not name the file", e)
			}
		}
	})
}
