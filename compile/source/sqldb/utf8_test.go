package sqldb_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
	"github.com/lutkit/lutkit/internal/dbtest"
)

// readCase is a query and what reading it gives.
type readCase struct {
	opts source.Options
	want sourcetest.Result
}

// checkReads reads each case's source and compares.
func checkReads(t *testing.T, cases []readCase) {
	t.Helper()
	for _, c := range cases {
		got, err := readAll(t, c.opts)
		if err != nil {
			t.Errorf("%s: %v", c.opts.Query, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.opts.Query, got, c.want)
		}
	}
}

// compileQuery compiles the rows of opts keyed on id.
func compileQuery(t *testing.T, opts source.Options, skip bool) (*compile.Stats, error) {
	t.Helper()
	r, err := source.Open("", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return compile.File(r, filepath.Join(t.TempDir(), "t.lut"), compile.Options{Key: []string{"id"}, SkipBadRows: skip})
}

// checkCompile checks that a compile of opts fails on the first of errs,
// and with SkipBadRows skips and counts the rows of errs and keeps rows
// rows.
func checkCompile(t *testing.T, opts source.Options, rows int64, errs []string) {
	t.Helper()
	if _, err := compileQuery(t, opts, false); err == nil || err.Error() != errs[0] {
		t.Errorf("compile: %v, want %s", err, errs[0])
	}
	st, err := compileQuery(t, opts, true)
	if err != nil {
		t.Fatalf("compile skipping bad rows: %v", err)
	}
	var bad []string
	for _, e := range st.BadRows {
		bad = append(bad, e.Error())
	}
	if st.Rows != rows || st.SkippedRows != int64(len(errs)) || !reflect.DeepEqual(bad, errs) {
		t.Errorf("compile skipping bad rows: %d rows, %d skipped %q; want %d, %d %q", st.Rows, st.SkippedRows, bad, rows, len(errs), errs)
	}
}

// TestPostgresNotUTF8: a value that is not UTF-8 text is a bad row
// naming the row and the column, as in SQLite: text of a SQL_ASCII
// database (the server stores and sends any bytes), text sent in a client
// encoding other than UTF-8 (client_encoding=LATIN1 in the URL), and a
// bytea of bytes that are not text (a bytea is read as its bytes), whose
// error says to select a text form of it. A bytea of UTF-8 text is its
// bytes. A compile fails on the first bad row, or skips and counts them.
func TestPostgresNotUTF8(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.Exec(t, "", `CREATE DATABASE sqlascii ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'`)
	url := strings.Replace(p.URL, "/"+dbtest.Database+"?", "/sqlascii?", 1)
	p.Exec(t, url,
		`CREATE TABLE assets (id int, n text, raw bytea)`,
		`INSERT INTO assets VALUES (1, 'a', '\x626c6f62'), (2, E'A\xff', NULL), (3, 'c', '\xff00626c6f62'), (4, 'd', NULL)`,
	)
	name := fmt.Sprintf("postgres://%s@127.0.0.1:%d/", dbtest.User, p.Port)
	pw := passwordFile(t, dbtest.Password)
	opts := source.Options{Postgres: url, PasswordFile: pw}
	query := func(o source.Options, q string) source.Options { o.Query = q; return o }
	all := query(opts, "SELECT * FROM assets ORDER BY id")
	errs := []string{
		name + `sqlascii:2:2: invalid UTF-8 in column "n" of the query, row 2`,
		name + `sqlascii:3:3: bytea in column "raw" of the query, row 3, is not UTF-8 text: select a text form of it with --query (query in tables.yaml), such as encode("raw", 'hex')`,
	}
	checkReads(t, []readCase{
		{all, sourcetest.Result{Columns: []string{"id", "n", "raw"}, Rows: []string{"1:1|a|blob", "4:4|d|"}, Errs: errs}},
		{query(opts, "SELECT id, n, encode(raw, 'hex') AS raw FROM assets WHERE id <> 2 ORDER BY id"), sourcetest.Result{Columns: []string{"id", "n", "raw"},
			Rows: []string{"1:1|a|626c6f62", "2:3|c|ff00626c6f62", "3:4|d|"}}},
		{query(opts, "SELECT n FROM assets ORDER BY id DESC"), sourcetest.Result{Columns: []string{"n"},
			Rows: []string{"1:d", "2:c", "4:a"}, Errs: []string{name + `sqlascii:3:1: invalid UTF-8 in column "n" of the query, row 3`}}},
		{source.Options{Postgres: p.URL + "&client_encoding=LATIN1", PasswordFile: pw, Query: "SELECT 1 AS id, 'K' || chr(246) || 'ln' AS city"}, sourcetest.Result{Columns: []string{"id", "city"},
			Errs: []string{name + dbtest.Database + `:1:2: invalid UTF-8 in column "city" of the query, row 1`}}},
	})
	checkCompile(t, all, 2, errs)
	if st, err := compileQuery(t, query(opts, "SELECT id, n, encode(raw, 'hex') AS raw FROM assets WHERE id <> 2"), false); err != nil || st.Rows != 3 {
		t.Errorf("compile of the valid rows: %v, %+v", err, st)
	}
}

// TestMySQLNotUTF8: a value that is not UTF-8 text is a bad row naming
// the row and the column, as in SQLite: text sent in a connection
// character set other than UTF-8 (charset=latin1 in the DSN; by default
// the driver's utf8mb4 has the server convert a latin1 column), and a
// binary string (VARBINARY, BLOB, a X'..' literal) of bytes that are not
// text, whose error says to select a text form of it. A binary string of
// UTF-8 text is its bytes. A compile fails on the first bad row, or skips
// and counts them.
func TestMySQLNotUTF8(t *testing.T) {
	m := dbtest.StartMariaDB(t)
	m.Exec(t,
		`CREATE TABLE assets (id INT, n VARCHAR(10) CHARACTER SET latin1, raw VARBINARY(10), doc BLOB)`,
		`INSERT INTO assets VALUES (1, 'a', x'626c6f62', x'7b7d'), (2, 'é', NULL, NULL), (3, 'c', x'ff00626c6f62', NULL), (4, 'd', NULL, x'ff'), (5, 'e', NULL, NULL)`,
	)
	name := fmt.Sprintf("mysql://%s@127.0.0.1:%d/%s", dbtest.User, m.Port, dbtest.Database)
	sep := "?"
	if strings.Contains(m.DSN, "?") {
		sep = "&"
	}
	opts := source.Options{MySQL: m.DSN, PasswordFile: passwordFile(t, dbtest.Password)}
	query := func(o source.Options, q string) source.Options { o.Query = q; return o }
	latin1 := opts
	latin1.MySQL += sep + "charset=latin1"
	all := query(opts, "SELECT * FROM assets ORDER BY id")
	errs := []string{
		name + ":3:3: VARBINARY in column \"raw\" of the query, row 3, is not UTF-8 text: select a text form of it with --query (query in tables.yaml), such as HEX(`raw`)",
		name + ":4:4: BLOB in column \"doc\" of the query, row 4, is not UTF-8 text: select a text form of it with --query (query in tables.yaml), such as HEX(`doc`)",
	}
	checkReads(t, []readCase{
		{all, sourcetest.Result{Columns: []string{"id", "n", "raw", "doc"}, Rows: []string{"1:1|a|blob|{}", "2:2|é||", "5:5|e||"}, Errs: errs}},
		{query(opts, "SELECT id, n, HEX(raw) AS raw, HEX(doc) AS doc FROM assets ORDER BY id"), sourcetest.Result{Columns: []string{"id", "n", "raw", "doc"},
			Rows: []string{"1:1|a|626C6F62|7B7D", "2:2|é||", "3:3|c|FF00626C6F62|", "4:4|d||FF", "5:5|e||"}}},
		{query(latin1, "SELECT n FROM assets ORDER BY id DESC"), sourcetest.Result{Columns: []string{"n"},
			Rows: []string{"1:e", "2:d", "3:c", "5:a"}, Errs: []string{name + `:4:1: invalid UTF-8 in column "n" of the query, row 4`}}},
		{query(opts, "SELECT 1 AS id, X'FF61' AS lit"), sourcetest.Result{Columns: []string{"id", "lit"},
			Errs: []string{name + ":1:2: VARBINARY in column \"lit\" of the query, row 1, is not UTF-8 text: select a text form of it with --query (query in tables.yaml), such as HEX(`lit`)"}}},
		// The first byte of é ends a value and its last starts the next:
		// the row's bytes are valid UTF-8, its values are not.
		{query(opts, "SELECT X'6BC3' AS k, X'A9' AS v"), sourcetest.Result{Columns: []string{"k", "v"},
			Errs: []string{name + ":1:1: VARBINARY in column \"k\" of the query, row 1, is not UTF-8 text: select a text form of it with --query (query in tables.yaml), such as HEX(`k`)"}}},
	})
	checkCompile(t, all, 3, errs)
	if st, err := compileQuery(t, query(opts, "SELECT id, n, HEX(raw) AS raw, HEX(doc) AS doc FROM assets"), false); err != nil || st.Rows != 5 {
		t.Errorf("compile of the valid rows: %v, %+v", err, st)
	}
}
