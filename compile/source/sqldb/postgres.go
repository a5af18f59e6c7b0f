package sqldb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lutkit/lutkit/compile/source"
)

// pgReader reads the rows of a query on PostgreSQL.
type pgReader struct {
	query
	conn   *pgx.Conn
	tx     pgx.Tx
	rows   pgx.Rows
	isBool []bool
	types  []string // ColumnTypes
}

// pgPasswordKey finds a password in a keyword/value connection string.
var pgPasswordKey = regexp.MustCompile(`(^|\s)password\s*=`)

func openPostgres(_ string, opts source.Options) (_ source.Reader, err error) {
	conn := opts.Postgres
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, ok := u.User.Password(); ok {
			return nil, errors.New("postgres: the connection URL holds a password; give it in PGPASSWORD, ~/.pgpass or a password file instead (the URL is stored and logged)")
		}
	} else if pgPasswordKey.MatchString(conn) {
		return nil, errors.New("postgres: the connection string holds a password; give it in PGPASSWORD, ~/.pgpass or a password file instead (the string is stored and logged)")
	}
	cfg, err := pgx.ParseConfig(conn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err) // it holds no password: refused above
	}
	if opts.PasswordFile != "" {
		if cfg.Password, err = readPasswordFile(opts.PasswordFile); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	r := &pgReader{query: query{
		name:     fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database),
		password: cfg.Password,
		hexOf:    pgHexOf,
	}}
	defer func() {
		if err != nil {
			r.Close()
			err = fmt.Errorf("%s: %w", r.name, scrub(err, r.password))
		}
	}()
	ctx := context.Background()
	if r.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		return nil, err
	}
	if r.tx, err = r.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}); err != nil {
		return nil, err
	}
	// Every column in text form but bytea, whose text form is hex.
	r.rows, err = r.tx.Query(ctx, opts.Query, pgx.QueryResultFormatsByOID{pgtype.ByteaOID: pgx.BinaryFormatCode})
	if err != nil {
		return nil, err
	}
	fds := r.rows.FieldDescriptions()
	if len(fds) == 0 {
		// An error (such as a write in this read-only transaction) comes
		// with the first row.
		r.rows.Next()
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the query returns no columns")
	}
	for _, fd := range fds {
		r.columns = append(r.columns, fd.Name)
		r.isBool = append(r.isBool, fd.DataTypeOID == pgtype.BoolOID)
		binary := ""
		if fd.DataTypeOID == pgtype.ByteaOID {
			binary = "bytea"
		}
		r.binary = append(r.binary, binary)
		r.types = append(r.types, pgColumnType(fd.DataTypeOID))
	}
	if err := source.CheckColumnNames(r.columns); err != nil {
		return nil, err
	}
	r.row = newRow(len(r.columns))
	return r, nil
}

// ColumnTypes types the columns by the result's column types
// (source.Typed).
func (r *pgReader) ColumnTypes() []string { return r.types }

// pgColumnType is the .lut column type of the text form of a value of the
// type oid: integers, floats and numeric are JSON numbers (but for NaN and
// the infinities, a row error when typed), booleans true or false (as Next
// writes them), json and jsonb JSON texts; everything else is text.
func pgColumnType(oid uint32) string {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
		return "number"
	case pgtype.BoolOID:
		return "bool"
	case pgtype.JSONOID, pgtype.JSONBOID:
		return "json"
	}
	return ""
}

func (r *pgReader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.more(r.rows.Next(), r.rows.Err) {
		return nil, r.err
	}
	r.line++
	buf := r.row.buf[:0]
	for i, v := range r.rows.RawValues() {
		if r.isBool[i] && len(v) == 1 {
			if v[0] == 't' {
				v = []byte("true")
			} else {
				v = []byte("false")
			}
		}
		buf = append(buf, v...)
		r.row.ends[i] = len(buf)
	}
	r.row.buf = buf
	return r.fields()
}

// pgHexOf is the hex text form of the column col.
func pgHexOf(col string) string {
	return "encode(" + pgx.Identifier{col}.Sanitize() + ", 'hex')"
}

func (r *pgReader) Close() error {
	if r.conn == nil {
		return nil
	}
	if r.rows != nil {
		r.rows.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.tx != nil {
		_ = r.tx.Rollback(ctx) // read only: nothing to keep
	}
	err := r.conn.Close(ctx)
	r.conn = nil
	r.closed()
	return scrub(err, r.password)
}
