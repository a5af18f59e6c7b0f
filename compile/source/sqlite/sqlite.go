package sqlite

import (
	"github.com/lutkit/lutkit/compile/source"

	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteReader reads the rows of a SQLite table or query.
type sqliteReader struct {
	name    string
	what    string // `table "t"` or "the query", for errors
	db      *sql.DB
	rows    *sql.Rows
	columns []string
	vals    []any
	ptrs    []any
	buf     []byte
	ends    []int
	fields  [][]byte
	line    int64
	err     error
}

// openSQLite opens the SQLite database at path read-only and starts the
// table scan or query selected by opts.
//
// A table is read with every column wrapped in a unary "+", which keeps
// its value but hides the declared type from the driver, so that text in
// columns declared DATE, DATETIME or TIMESTAMP comes out exactly as
// stored. Values that a query returns straight from such a column are
// turned into time.Time by the driver and come out in RFC 3339 form.
func openSQLite(path string, opts source.Options) (_ source.Reader, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// A writer's commit shuts readers out for a moment: wait for it (up
	// to 30 s) rather than fail with "database is locked".
	dsn := "file:" + sqlitePathEscape(filepath.ToSlash(abs)) + "?mode=ro&_pragma=busy_timeout(30000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	defer func() {
		if err != nil {
			db.Close()
		}
	}()

	query := opts.SQLiteQuery
	if query != "" && opts.SQLiteTable != "" {
		return nil, fmt.Errorf("%s: both a SQLite table and a query given", path)
	}
	what := "the query"
	if query == "" {
		table := opts.SQLiteTable
		if table == "" {
			tables, err := sqliteTables(db)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			switch len(tables) {
			case 0:
				return nil, fmt.Errorf("%s: database has no tables", path)
			case 1:
				table = tables[0]
			default:
				return nil, fmt.Errorf("%s: database has %d tables (%s); choose one with a table name or a query",
					path, len(tables), strings.Join(tables, ", "))
			}
		}
		if query, err = sqliteTableQuery(db, table); err != nil {
			return nil, fmt.Errorf("%s: table %q: %w", path, table, err)
		}
		what = fmt.Sprintf("table %q", table)
	}

	rows, err := db.Query(query)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := source.CheckColumnNames(cols); err != nil {
		rows.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &sqliteReader{
		name:    path,
		what:    what,
		db:      db,
		rows:    rows,
		columns: cols,
		vals:    make([]any, len(cols)),
		ptrs:    make([]any, len(cols)),
		ends:    make([]int, len(cols)),
		fields:  make([][]byte, len(cols)),
	}
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	return r, nil
}

// sqlitePathEscape escapes the characters that are special in a SQLite
// URI file name.
func sqlitePathEscape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	// A path starting with "//" would be read as an authority.
	s := b.String()
	if strings.HasPrefix(s, "//") {
		s = "/" + strings.TrimLeft(s, "/")
	}
	return s
}

// sqliteTables lists the tables of db in name order.
func sqliteTables(db *sql.DB) ([]string, error) {
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		tables = append(tables, name)
	}
	return tables, rows.Err()
}

// sqliteTableQuery builds the SELECT that reads table.
func sqliteTableQuery(db *sql.DB, table string) (string, error) {
	if strings.IndexByte(table, 0) >= 0 {
		return "", errors.New("invalid table name")
	}
	from := quoteIdent(table)
	rows, err := db.Query("SELECT * FROM " + from + " LIMIT 0")
	if err != nil {
		return "", err
	}
	cols, err := rows.Columns()
	rows.Close()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		q := quoteIdent(c)
		b.WriteString("+" + q + " AS " + q)
	}
	b.WriteString(" FROM " + from)
	return b.String(), nil
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func (r *sqliteReader) Columns() []string { return r.columns }

func (r *sqliteReader) Line() int64 { return r.line }

func (r *sqliteReader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			r.err = fmt.Errorf("%s: row %d: %w", r.name, r.line+1, err)
		} else {
			r.err = io.EOF
		}
		return nil, r.err
	}
	if err := r.rows.Scan(r.ptrs...); err != nil {
		r.err = fmt.Errorf("%s: row %d: %w", r.name, r.line+1, err)
		return nil, r.err
	}
	r.line++
	buf := r.buf[:0]
	for i, v := range r.vals {
		switch v := v.(type) {
		case nil:
		case int64:
			buf = strconv.AppendInt(buf, v, 10)
		case float64:
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		case string:
			buf = append(buf, v...)
		case []byte:
			buf = append(buf, v...)
		case bool:
			buf = strconv.AppendBool(buf, v)
		case time.Time:
			buf = v.AppendFormat(buf, time.RFC3339Nano)
		default:
			buf = fmt.Append(buf, v)
		}
		r.ends[i] = len(buf)
	}
	r.buf = buf
	source.SplitFields(r.fields, buf, r.ends)
	if !source.ValidFields(buf, r.fields) {
		return nil, r.utf8Error()
	}
	return r.fields, nil
}

// utf8Error is the row error for the first value of the row that is not
// UTF-8 text: TEXT holding invalid UTF-8, or a BLOB of bytes that are not
// text. A BLOB is its bytes when they are UTF-8 text (as PostgreSQL's
// bytea and MySQL's BLOB are); binary data has no text form of its own,
// so the error says how to select one.
func (r *sqliteReader) utf8Error() error {
	for i, f := range r.fields {
		if utf8.Valid(f) {
			continue
		}
		col := r.columns[i]
		var err error
		if _, blob := r.vals[i].([]byte); blob {
			err = fmt.Errorf("BLOB in column %q of %s, row %d, is not UTF-8 text: select a text form of it with --sqlite-query (sqlite_query in tables.yaml), such as hex(%s)",
				col, r.what, r.line, quoteIdent(col))
		} else {
			err = fmt.Errorf("invalid UTF-8 in column %q of %s, row %d", col, r.what, r.line)
		}
		return &source.RowError{File: r.name, Line: r.line, Column: i + 1, Err: err}
	}
	return nil
}

func (r *sqliteReader) Close() error {
	if r.rows == nil {
		return nil
	}
	err := r.rows.Close()
	if cerr := r.db.Close(); err == nil {
		err = cerr
	}
	r.rows = nil
	if r.err == nil {
		r.err = errors.New("source: reader closed")
	}
	return err
}
