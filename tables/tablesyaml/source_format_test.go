package tablesyaml

import (
	"strings"
	"testing"
)

// TestConfigSQLiteOptionsOnOtherSources: sqlite_table and sqlite_query on
// a source that is not SQLite are refused at their position, not ignored.
func TestConfigSQLiteOptionsOnOtherSources(t *testing.T) {
	const yml = `version: 1
tables:
  - name: csv
    key: id
    sources:
      - path: assets.csv
        sqlite_table: assets
  - name: json
    key: id
    sources:
      - path: assets.db
        format: json
        sqlite_query: select 1
  - name: db
    key: id
    sources:
      - path: assets.db
        sqlite_table: assets
`
	_, err := ParseConfig("tables.yaml", []byte(yml))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, w := range []string{
		`tables.yaml:7:23: table "csv": sources[0].sqlite_table: applies to SQLite sources only; assets.csv is read as CSV`,
		`tables.yaml:13:23: table "json": sources[0].sqlite_query: applies to SQLite sources only; assets.db is read as JSON`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("missing error %q", w)
		}
	}
	if strings.Contains(msg, `table "db"`) {
		t.Errorf("a SQLite source's sqlite_table refused")
	}
	if t.Failed() {
		t.Logf("errors:\n%s", msg)
	}
}
