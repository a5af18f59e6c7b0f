package sqlite_test

import (
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
	_ "github.com/lutkit/lutkit/compile/source/sqlite"

	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// makeSQLite creates a SQLite database at path by running stmts.
func makeSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	// The driver reads "?" in a plain name as the start of parameters, so
	// build the database under a plain name and rename it.
	tmp := filepath.Join(t.TempDir(), "build.db")
	db, err := sql.Open("sqlite", tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestSQLite(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one table?#%.db")
	makeSQLite(t, one,
		`CREATE TABLE "cust ""x""" (id INTEGER, name TEXT, score REAL, raw BLOB, joined DATE, note)`,
		`INSERT INTO "cust ""x""" VALUES (1, 'Ann, "A"', 1.5, x'00c3a941', '2021-03-04', NULL)`, // a BLOB of UTF-8 text
		`INSERT INTO "cust ""x""" VALUES (-9223372036854775808, 'Bo', 0.1, NULL, '2021-03-04 05:06:07', 42)`,
		`INSERT INTO "cust ""x""" VALUES (3, '', 1e300, x'', 'not a date', 2.5)`,
	)
	want := sourcetest.Result{
		Columns: []string{"id", "name", "score", "raw", "joined", "note"},
		Rows: []string{
			"1:1|Ann, \"A\"|1.5|\x00éA|2021-03-04|",
			"2:-9223372036854775808|Bo|0.1||2021-03-04 05:06:07|42",
			"3:3||1e+300||not a date|2.5",
		},
	}

	t.Run("only table", func(t *testing.T) {
		r, err := source.Open(one, source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := sourcetest.ReadAll(t, r); !reflect.DeepEqual(got, want) {
			t.Errorf("got  %#v\nwant %#v", got, want)
		}
	})
	t.Run("named table", func(t *testing.T) {
		r, err := source.Open(one, source.Options{Format: "sqlite", SQLiteTable: `cust "x"`})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := sourcetest.ReadAll(t, r); !reflect.DeepEqual(got, want) {
			t.Errorf("got  %#v\nwant %#v", got, want)
		}
	})
	t.Run("query", func(t *testing.T) {
		r, err := source.Open(one, source.Options{SQLiteQuery: `SELECT name AS n, id * 2 AS twice, upper(name) FROM "cust ""x""" WHERE id > 0 ORDER BY id`})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		w := sourcetest.Result{
			Columns: []string{"n", "twice", "upper(name)"},
			Rows:    []string{"1:Ann, \"A\"|2|ANN, \"A\"", "2:|6|"},
		}
		if got := sourcetest.ReadAll(t, r); !reflect.DeepEqual(got, w) {
			t.Errorf("got  %#v\nwant %#v", got, w)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		r, err := source.Open(one, source.Options{SQLiteQuery: `INSERT INTO "cust ""x""" VALUES (9, 'x', 0, NULL, NULL, NULL) RETURNING id`})
		if err == nil {
			_, err = r.Next()
			r.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "readonly") {
			t.Errorf("write through the reader: err = %v", err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		two := filepath.Join(dir, "two.sqlite")
		makeSQLite(t, two, `CREATE TABLE b (x)`, `CREATE TABLE a (y)`)
		_, err := source.Open(two, source.Options{})
		if err == nil || err.Error() != two+": database has 2 tables (a, b); choose one with a table name or a query" {
			t.Errorf("two tables: %v", err)
		}
		_, err = source.Open(two, source.Options{SQLiteTable: "nope"})
		if err == nil || !strings.HasPrefix(err.Error(), two+`: table "nope": `) {
			t.Errorf("missing table: %v", err)
		}
		_, err = source.Open(two, source.Options{SQLiteQuery: "SELEC 1"})
		if err == nil || !strings.HasPrefix(err.Error(), two+": ") {
			t.Errorf("bad query: %v", err)
		}
		_, err = source.Open(two, source.Options{SQLiteQuery: "SELECT x, x FROM b"})
		if err == nil || !strings.Contains(err.Error(), "duplicate column name") {
			t.Errorf("duplicate columns: %v", err)
		}
		empty := filepath.Join(dir, "empty.sqlite3")
		makeSQLite(t, empty, `CREATE VIEW v AS SELECT 1`)
		_, err = source.Open(empty, source.Options{})
		if err == nil || err.Error() != empty+": database has no tables" {
			t.Errorf("no tables: %v", err)
		}
		r, err := source.Open(empty, source.Options{SQLiteTable: "v"})
		if err != nil {
			t.Fatalf("view: %v", err)
		}
		if got := sourcetest.ReadAll(t, r); !reflect.DeepEqual(got.Rows, []string{"1:1"}) {
			t.Errorf("view rows %q", got.Rows)
		}
		r.Close()
		if _, err := source.Open(filepath.Join(dir, "missing.db"), source.Options{}); err == nil || !strings.Contains(err.Error(), "missing.db") {
			t.Errorf("missing file: %v", err)
		}
	})
}

// TestSQLiteNotUTF8: a TEXT value holding invalid UTF-8 is a bad row
// naming the table or query, the row and the column; so is a BLOB of
// bytes that are not UTF-8 text (binary data), whose error says to select
// a text form of it. A BLOB of UTF-8 text is its bytes.
func TestSQLiteNotUTF8(t *testing.T) {
	db := filepath.Join(t.TempDir(), "inv.db")
	makeSQLite(t, db,
		`CREATE TABLE assets (id INTEGER, n TEXT, raw BLOB)`,
		`INSERT INTO assets VALUES (1, 'a', x'626c6f62')`,
		`INSERT INTO assets VALUES (2, CAST(x'41ff' AS TEXT), NULL)`,
		`INSERT INTO assets VALUES (3, 'c', x'ff00626c6f62')`,
		`INSERT INTO assets VALUES (4, 'd', NULL)`,
	)
	for _, c := range []struct {
		opts source.Options
		want sourcetest.Result
	}{
		{source.Options{}, sourcetest.Result{Columns: []string{"id", "n", "raw"}, Rows: []string{"1:1|a|blob", "4:4|d|"}, Errs: []string{
			`:2:2: invalid UTF-8 in column "n" of table "assets", row 2`,
			`:3:3: BLOB in column "raw" of table "assets", row 3, is not UTF-8 text: select a text form of it with --sqlite-query (sqlite_query in tables.yaml), such as hex("raw")`,
		}}},
		{source.Options{SQLiteQuery: "SELECT id, n, hex(raw) AS raw FROM assets WHERE id <> 2"}, sourcetest.Result{Columns: []string{"id", "n", "raw"},
			Rows: []string{"1:1|a|626C6F62", "2:3|c|FF00626C6F62", "3:4|d|"}}},
		{source.Options{SQLiteQuery: "SELECT n FROM assets ORDER BY id DESC"}, sourcetest.Result{Columns: []string{"n"},
			Rows: []string{"1:d", "2:c", "4:a"}, Errs: []string{`:3:1: invalid UTF-8 in column "n" of the query, row 3`}}},
		// The first byte of é ends a value and its last starts the next:
		// the row's bytes are valid UTF-8, its values are not.
		{source.Options{SQLiteQuery: "SELECT CAST(x'6bc3' AS TEXT) AS k, CAST(x'a9' AS TEXT) AS v"}, sourcetest.Result{Columns: []string{"k", "v"},
			Errs: []string{`:1:1: invalid UTF-8 in column "k" of the query, row 1`}}},
	} {
		r, err := source.Open(db, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		got := sourcetest.ReadAll(t, r)
		r.Close()
		for i, e := range got.Errs {
			got.Errs[i] = strings.TrimPrefix(e, db)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v:\ngot  %q\nwant %q", c.opts, got, c.want)
		}
	}
}
