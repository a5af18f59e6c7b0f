package enrichd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyTablesDirWarns: a daemon started on a tables directory that
// holds no table warns once, naming the directory, with rules (whose
// tables it lacks) and without (the lookup API alone serves the tables);
// one started on a directory that holds a table does not.
func TestEmptyTablesDirWarns(t *testing.T) {
	const warning = `level=WARN msg="tables: no table in tables.path: every lookup misses until tables are built or published there (lut build), or tables.path names the directory that holds them" path=`
	start := func(t *testing.T, dir, body string) string {
		t.Helper()
		tdir := filepath.Join(dir, "tables")
		yml := fmt.Sprintf("tables: {path: %q}\nhttp: {listen: \"127.0.0.1:0\"}\n%s", tdir, body)
		cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
		if err != nil {
			t.Fatalf("%v\n%s", err, yml)
		}
		r, logs := startDaemonLogged(t, cfg)
		r.stop(t)
		return logs.String()
	}
	withRules := func(dir string) string {
		return fmt.Sprintf(`inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
rules:
  - {name: cust, table: customers, field: cust, target: c}
outputs:
  - {type: file, path: %q}
`, filepath.Join(dir, "out.json"))
	}
	for _, rules := range []bool{true, false} {
		t.Run(fmt.Sprintf("empty, rules %v", rules), func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.Mkdir(filepath.Join(dir, "tables"), 0o755))
			body := ""
			if rules {
				body = withRules(dir)
			}
			logs := start(t, dir, body)
			if n := strings.Count(logs, warning+filepath.Join(dir, "tables")+"\n"); n != 1 {
				t.Errorf("%d warnings naming the empty directory, want 1; log:\n%s", n, logs)
			}
		})
	}
	t.Run("a table", func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.Mkdir(filepath.Join(dir, "tables"), 0o755))
		buildCustomers(t, filepath.Join(dir, "tables", "customers.lut"), 10, 1)
		if logs := start(t, dir, withRules(dir)); strings.Contains(logs, "no table in tables.path") || !strings.Contains(logs, "tables=1") {
			t.Errorf("a directory holding a table: log:\n%s", logs)
		}
	})
}
