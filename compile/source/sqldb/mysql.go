package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lutkit/lutkit/compile/source"
)

// myReader reads the rows of a query on MySQL or MariaDB.
type myReader struct {
	query
	db    *sql.DB
	tx    *sql.Tx
	rows  *sql.Rows
	vals  []sql.RawBytes
	ptrs  []any
	types []string // ColumnTypes
}

func openMySQL(_ string, opts source.Options) (_ source.Reader, err error) {
	cfg, err := mysql.ParseDSN(opts.MySQL)
	if err != nil {
		return nil, errors.New("mysql: invalid DSN (want user@tcp(host:port)/database)") // the driver's error may quote it
	}
	if cfg.Passwd != "" {
		return nil, errors.New("mysql: the DSN holds a password; give it in MYSQL_PWD or a password file instead (the DSN is stored and logged)")
	}
	switch {
	case opts.PasswordFile != "":
		if cfg.Passwd, err = readPasswordFile(opts.PasswordFile); err != nil {
			return nil, fmt.Errorf("mysql: %w", err)
		}
	default:
		cfg.Passwd = os.Getenv("MYSQL_PWD")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	r := &myReader{query: query{name: fmt.Sprintf("mysql://%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName), password: cfg.Passwd, hexOf: myHexOf}}
	defer func() {
		if err != nil {
			r.Close()
			err = fmt.Errorf("%s: %w", r.name, scrub(err, r.password))
		}
	}()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	r.db = sql.OpenDB(connector)
	r.db.SetMaxOpenConns(1)
	ctx := context.Background()
	if r.tx, err = r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}); err != nil {
		return nil, err
	}
	// Without arguments the query runs on the text protocol, and its
	// result set is read as it arrives.
	if r.rows, err = r.tx.QueryContext(ctx, opts.Query); err != nil {
		return nil, err
	}
	if r.columns, err = r.rows.Columns(); err != nil {
		return nil, err
	}
	if err := source.CheckColumnNames(r.columns); err != nil {
		return nil, err
	}
	cts, err := r.rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	for _, ct := range cts {
		r.types = append(r.types, myColumnType(ct.DatabaseTypeName()))
		r.binary = append(r.binary, myBinaryType(ct.DatabaseTypeName()))
	}
	r.vals = make([]sql.RawBytes, len(r.columns))
	r.ptrs = make([]any, len(r.columns))
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	r.row = newRow(len(r.columns))
	return r, nil
}

// ColumnTypes types the columns by the result's column types
// (source.Typed).
func (r *myReader) ColumnTypes() []string { return r.types }

// myColumnType is the .lut column type of the text form of a value of the
// MySQL or MariaDB type name: integers (BOOLEAN is TINYINT), decimals and
// floats are JSON numbers, JSON columns JSON texts (MariaDB's JSON is
// LONGTEXT and stays text); everything else is text.
func myColumnType(name string) string {
	switch strings.TrimPrefix(name, "UNSIGNED ") {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "DECIMAL", "FLOAT", "DOUBLE", "YEAR":
		return "number"
	case "JSON":
		return "json"
	}
	return ""
}

func (r *myReader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.more(r.rows.Next(), r.rows.Err) {
		return nil, r.err
	}
	if err := r.rows.Scan(r.ptrs...); err != nil {
		r.err = r.rowError(err)
		return nil, r.err
	}
	r.line++
	buf := r.row.buf[:0]
	for i, v := range r.vals {
		buf = append(buf, v...)
		r.row.ends[i] = len(buf)
	}
	r.row.buf = buf
	return r.fields()
}

// myBinaryType is name, the driver's name of a column's type, when the
// column's values are binary strings (the driver names a column of the
// binary character set BINARY, VARBINARY or BLOB), or else "".
func myBinaryType(name string) string {
	switch name {
	case "BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB":
		return name
	}
	return ""
}

// myHexOf is the hex text form of the column col.
func myHexOf(col string) string {
	return "HEX(`" + strings.ReplaceAll(col, "`", "``") + "`)"
}

func (r *myReader) Close() error {
	if r.db == nil {
		return nil
	}
	var err error
	if r.rows != nil {
		err = r.rows.Close()
	}
	if r.tx != nil {
		_ = r.tx.Rollback() // read only: nothing to keep
	}
	if cerr := r.db.Close(); err == nil {
		err = cerr
	}
	r.db = nil
	r.closed()
	return scrub(err, r.password)
}
