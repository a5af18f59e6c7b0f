package tablebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/dbtest"
	"github.com/lutkit/lutkit/reader"
)

// TestBuildFromPostgres builds a table whose source is a query in
// tables.yaml, changes a row in the database and builds again: the new
// artifact holds the change (a database source is never "unchanged").
func TestBuildFromPostgres(t *testing.T) {
	pg := dbtest.StartPostgres(t)
	pg.Exec(t, "", "CREATE TABLE assets (id text, owner text)", "INSERT INTO assets VALUES ('a1', 'ann'), ('a2', 'bo')")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte(dbtest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`version: 1
tables:
  - name: assets
    sources:
      - postgres: %s
        query: SELECT id, owner FROM assets ORDER BY id
        password_file: %s
    key: id
`, pg.URL, filepath.Join(dir, "pw"))
	cfgPath := filepath.Join(dir, "tables.yaml")
	if err := os.WriteFile(cfgPath, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	owner := func(r *Result, key string) string {
		t.Helper()
		if r.Tables[0].Status != StatusBuilt {
			t.Fatalf("status %s: %v", r.Tables[0].Status, r.Tables[0].Err)
		}
		tb, err := reader.Open(filepath.Join(out, r.Manifest.Tables[0].File))
		if err != nil {
			t.Fatal(err)
		}
		defer tb.Close()
		var row reader.Row
		if !tb.Get([]byte(key), &row) {
			t.Fatalf("key %q missing", key)
		}
		return string(row.Col(1))
	}
	r1, err := Build(context.Background(), cfg, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := owner(r1, "a2"); got != "bo" {
		t.Errorf("first build: a2 owner %q", got)
	}
	if src := r1.Manifest.Tables[0].Sources; len(src) != 1 || src[0].Path != pg.URL || strings.Contains(src[0].Path, dbtest.Password) {
		t.Errorf("manifest sources %+v", src)
	}
	pg.Exec(t, "", "UPDATE assets SET owner = 'cy' WHERE id = 'a2'")
	r2, err := Build(context.Background(), cfg, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := owner(r2, "a2"); got != "cy" {
		t.Errorf("second build: a2 owner %q, want the updated cy", got)
	}
	if r1.Manifest.Tables[0].SHA256 == r2.Manifest.Tables[0].SHA256 {
		t.Error("the artifact did not change with the row")
	}
}

func TestConfigDatabaseSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tables.yaml")
	err := os.WriteFile(path, []byte(`version: 1
tables:
  - name: a
    sources:
      - path: a.csv
        mysql: u@tcp(h:3306)/db
        query: SELECT 1
    key: id
  - name: b
    sources:
      - postgres: postgres://u@h/db
    key: id
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(path)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`:5:9: table "a": sources[0].path: a mysql source reads no file`, `table "b": sources[0].query: missing: a postgres source needs the SELECT to run`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
