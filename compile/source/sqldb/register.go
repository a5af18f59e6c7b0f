// Package sqldb reads the result of a query on a PostgreSQL server
// (github.com/jackc/pgx/v5) or a MySQL or MariaDB server
// (github.com/go-sql-driver/mysql) as a row source for the compiler.
// Importing it registers the "postgres" and "mysql" sources with package
// source (Options.Postgres, Options.MySQL and Options.Query).
//
// The query runs in one read-only REPEATABLE READ transaction, so the
// rows come from one snapshot of the database, and its rows stream: the
// reader holds one row at a time (pgx reads the rows as they arrive; the
// MySQL driver reads an unbuffered result set).
//
// Values come out as text, as from SQLite: the server's text form of
// each value (PostgreSQL's output functions, the MySQL text protocol),
// booleans as true and false, binary strings (bytea, BLOB) as their
// bytes, and NULL as an empty value. A value that is not UTF-8 text is a
// bad row, as in SQLite: text of a PostgreSQL SQL_ASCII database or sent
// in a client character set other than UTF-8 (client_encoding=LATIN1 in
// the URL, charset=latin1 in the DSN) that holds invalid UTF-8, or a
// binary string of bytes that are not text.
//
// The password never comes from the connection string, which is stored
// in tables.yaml, shown in process lists and written to logs: a
// connection string that holds one is refused. It comes from the
// environment (PGPASSWORD or ~/.pgpass for PostgreSQL, MYSQL_PWD for
// MySQL) or from Options.PasswordFile, and errors never show it.
package sqldb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lutkit/lutkit/compile/source"
)

func init() {
	source.RegisterFormat("postgres", nil, openPostgres)
	source.RegisterFormat("mysql", nil, openMySQL)
}

// readPasswordFile returns the first line of the file at path.
func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("password file %s: the first line is empty", path)
	}
	return pw, nil
}

// scrub returns err with every occurrence of the password masked, in
// case a driver ever quotes it.
func scrub(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "xxxxx"))
}

// row turns one row's values into fields: SplitFields over one buffer.
type row struct {
	buf    []byte
	ends   []int
	fields [][]byte
}

func newRow(n int) row { return row{ends: make([]int, n), fields: make([][]byte, n)} }

func (r *row) split() [][]byte {
	source.SplitFields(r.fields, r.buf, r.ends)
	return r.fields
}

// query is what the PostgreSQL and MySQL readers share: the source's
// name (without the password), the password errors must mask, the
// columns, which of them are binary strings, the row being read and where
// the stream stands.
type query struct {
	name     string
	password string
	columns  []string
	// binary is, for each column, the name of its type when its values
	// are binary strings (bytea, BLOB), read as their bytes, or "" when
	// they are text; hexOf is the server's SQL for the hex text form of
	// a column (for the error about a binary string that is not text).
	binary []string
	hexOf  func(col string) string
	row    row
	line   int64
	err    error
}

func (q *query) Columns() []string { return q.columns }

func (q *query) Line() int64 { return q.line }

// Name names the source without its password.
func (q *query) Name() string { return q.name }

// more is called by Next with what the driver's Next returned (more) and
// its error function: false when the stream has ended (q.err is io.EOF)
// or failed (q.err says at which row).
func (q *query) more(more bool, rowsErr func() error) bool {
	if !more {
		if err := rowsErr(); err != nil {
			q.err = q.rowError(err)
		} else {
			q.err = io.EOF
		}
		return false
	}
	return true
}

// rowError is err at the row being read, the password masked.
func (q *query) rowError(err error) error {
	return fmt.Errorf("%s: row %d: %w", q.name, q.line+1, scrub(err, q.password))
}

// closed marks the stream closed, unless it had ended already.
func (q *query) closed() {
	if q.err == nil {
		q.err = errors.New("source: reader closed")
	}
}
