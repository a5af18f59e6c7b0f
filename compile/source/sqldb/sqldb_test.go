package sqldb_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
	_ "github.com/lutkit/lutkit/compile/source/sqldb"
	"github.com/lutkit/lutkit/internal/dbtest"
)

func passwordFile(t *testing.T, pw string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readAll(t *testing.T, opts source.Options) (sourcetest.Result, error) {
	t.Helper()
	r, err := source.Open("", opts)
	if err != nil {
		return sourcetest.Result{}, err
	}
	defer r.Close()
	return sourcetest.ReadAll(t, r), nil
}

// checkSecret fails if err is nil or shows the secret.
func checkSecret(t *testing.T, what string, err error, secret, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("%s: the error shows the password: %v", what, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q does not say %q", what, err, want)
	}
}

// snapshot checks that the rows come from one snapshot: a reader that
// has started reading a table does not see an update committed by
// another connection meanwhile.
func snapshot(t *testing.T, opts source.Options, update func()) {
	t.Helper()
	r, err := source.Open("", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	update()
	rows := 1
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows++
		if string(f[1]) != "0" {
			t.Fatalf("row %d: v = %q after the update committed elsewhere: not one snapshot", rows, f[1])
		}
	}
	if rows != 20000 {
		t.Errorf("%d rows, want 20000", rows)
	}
}

func TestPostgres(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.Exec(t, "",
		`CREATE TABLE cust (id bigint, name text, score float8, ok boolean, raw bytea, joined date, at timestamp, amount numeric(10,2), note text, doc jsonb)`,
		`INSERT INTO cust VALUES
			(1, 'Ann, "A"', 1.5, true, '\x00c3a941', '2021-03-04', '2021-03-04 05:06:07', 12.30, NULL, '{"a": [1, "é"]}'),
			(-9223372036854775808, 'Bo 🚀', 0.1, false, NULL, NULL, NULL, NULL, '', NULL),
			(3, '', 1e300, NULL, '', '2021-03-04', NULL, -0.5, 'x', NULL)`,
		`CREATE TABLE big (id int, v int)`,
		`INSERT INTO big SELECT g, 0 FROM generate_series(1, 20000) g`,
	)
	pw := passwordFile(t, dbtest.Password)
	opts := source.Options{Postgres: p.URL, Query: "SELECT * FROM cust ORDER BY id", PasswordFile: pw}
	want := sourcetest.Result{
		Columns: []string{"id", "name", "score", "ok", "raw", "joined", "at", "amount", "note", "doc"},
		Rows: []string{
			"1:-9223372036854775808|Bo 🚀|0.1|false||||||",
			"2:1|Ann, \"A\"|1.5|true|\x00éA|2021-03-04|2021-03-04 05:06:07|12.30||{\"a\": [1, \"é\"]}",
			"3:3||1e+300|||2021-03-04||-0.50|x|",
		},
	}
	t.Run("column types", func(t *testing.T) {
		r, err := source.Open("", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		want := []string{"number", "", "number", "bool", "", "", "", "number", "", "json"}
		if typed, ok := r.(source.Typed); !ok || !reflect.DeepEqual(typed.ColumnTypes(), want) {
			t.Errorf("column types of %v: not %v", r.Columns(), want)
		}
	})
	t.Run("types", func(t *testing.T) {
		got, err := readAll(t, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %#v\nwant %#v", got, want)
		}
	})
	t.Run("PGPASSWORD", func(t *testing.T) {
		t.Setenv("PGPASSWORD", dbtest.Password)
		o := opts
		o.PasswordFile = ""
		got, err := readAll(t, o)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %#v", err, got)
		}
	})
	t.Run("transaction", func(t *testing.T) {
		o := opts
		o.Query = "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro"
		got, err := readAll(t, o)
		if err != nil || !reflect.DeepEqual(got.Rows, []string{"1:repeatable read|on"}) {
			t.Errorf("%v: %#v", err, got)
		}
		o.Query = "INSERT INTO cust (id) VALUES (9) RETURNING id"
		got, err = readAll(t, o)
		if err == nil {
			err = fmt.Errorf("%v", got.Errs)
		}
		if !strings.Contains(err.Error(), "read-only transaction") {
			t.Errorf("a write: %v", err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		o := opts
		o.Query = "SELECT id, v FROM big ORDER BY id"
		snapshot(t, o, func() {
			if _, err := p.Conn(t).Exec(context.Background(), "UPDATE big SET v = 1"); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("errors", func(t *testing.T) {
		name := fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s", dbtest.User, p.Port, dbtest.Database)
		o := opts
		o.PasswordFile = passwordFile(t, "Wrong-pw-4711")
		_, err := source.Open("", o)
		checkSecret(t, "wrong password", err, "Wrong-pw-4711", name+": failed to connect")
		o = opts
		o.Postgres = strings.Replace(p.URL, dbtest.User+"@", dbtest.User+":In-url-pw-0815@", 1)
		_, err = source.Open("", o)
		checkSecret(t, "password in the URL", err, "In-url-pw-0815", "the connection URL holds a password")
		o.Postgres = fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=Kv-pw-1234", p.Port, dbtest.User)
		_, err = source.Open("", o)
		checkSecret(t, "password in a keyword string", err, "Kv-pw-1234", "the connection string holds a password")
		o = opts
		o.Query = "SELEC 1"
		_, err = source.Open("", o)
		checkSecret(t, "bad query", err, dbtest.Password, name+`: ERROR: syntax error at or near "SELEC"`)
		o.Query = "SELECT 1 AS a, 2 AS a"
		_, err = source.Open("", o)
		checkSecret(t, "duplicate columns", err, dbtest.Password, `duplicate column name "a"`)
		o.PasswordFile = filepath.Join(t.TempDir(), "missing")
		_, err = source.Open("", o)
		checkSecret(t, "missing password file", err, dbtest.Password, "password file: open ")
	})
}

func TestMySQL(t *testing.T) {
	m := dbtest.StartMariaDB(t)
	m.Exec(t,
		`CREATE TABLE cust (id BIGINT, name TEXT, score DOUBLE, ok BOOLEAN, raw BLOB, joined DATE, at DATETIME, amount DECIMAL(10,2), note TEXT)`,
		`INSERT INTO cust VALUES
			(1, 'Ann, "A"', 1.5, TRUE, x'00c3a941', '2021-03-04', '2021-03-04 05:06:07', 12.30, NULL),
			(-9223372036854775808, 'Bo 🚀', 0.1, FALSE, NULL, NULL, NULL, NULL, ''),
			(3, '', 1e300, NULL, '', '2021-03-04', NULL, -0.5, 'x')`,
		`CREATE TABLE big (id INT PRIMARY KEY, v INT)`,
		`INSERT INTO big SELECT seq, 0 FROM seq_1_to_20000`,
	)
	pw := passwordFile(t, dbtest.Password)
	opts := source.Options{MySQL: m.DSN, Query: "SELECT * FROM cust ORDER BY id", PasswordFile: pw}
	want := sourcetest.Result{
		Columns: []string{"id", "name", "score", "ok", "raw", "joined", "at", "amount", "note"},
		Rows: []string{
			"1:-9223372036854775808|Bo 🚀|0.1|0|||||",
			"2:1|Ann, \"A\"|1.5|1|\x00éA|2021-03-04|2021-03-04 05:06:07|12.30|",
			"3:3||1e+300|||2021-03-04||-0.50|x",
		},
	}
	t.Run("column types", func(t *testing.T) {
		r, err := source.Open("", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		want := []string{"number", "", "number", "number", "", "", "", "number", ""}
		if typed, ok := r.(source.Typed); !ok || !reflect.DeepEqual(typed.ColumnTypes(), want) {
			t.Errorf("column types of %v: not %v", r.Columns(), want)
		}
	})
	t.Run("types", func(t *testing.T) {
		got, err := readAll(t, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %#v\nwant %#v", got, want)
		}
	})
	t.Run("MYSQL_PWD", func(t *testing.T) {
		t.Setenv("MYSQL_PWD", dbtest.Password)
		o := opts
		o.PasswordFile = ""
		got, err := readAll(t, o)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %#v", err, got)
		}
	})
	t.Run("read only", func(t *testing.T) {
		o := opts
		o.Query = "INSERT INTO cust (id) VALUES (9) RETURNING id"
		got, err := readAll(t, o)
		if err == nil {
			err = fmt.Errorf("%v", got.Errs)
		}
		if !strings.Contains(err.Error(), "READ ONLY transaction") {
			t.Errorf("a write: %v", err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		o := opts
		o.Query = "SELECT id, v FROM big ORDER BY id"
		snapshot(t, o, func() {
			if _, err := m.DB(t).Exec("UPDATE big SET v = 1"); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("errors", func(t *testing.T) {
		name := fmt.Sprintf("mysql://%s@127.0.0.1:%d/%s", dbtest.User, m.Port, dbtest.Database)
		o := opts
		o.PasswordFile = passwordFile(t, "Wrong-pw-4711")
		_, err := source.Open("", o)
		checkSecret(t, "wrong password", err, "Wrong-pw-4711", name+": Error 1045")
		o = opts
		o.MySQL = strings.Replace(m.DSN, dbtest.User+"@", dbtest.User+":In-dsn-pw-0815@", 1)
		_, err = source.Open("", o)
		checkSecret(t, "password in the DSN", err, "In-dsn-pw-0815", "the DSN holds a password")
		o.MySQL = "In-dsn-pw-0815@tcp(127.0.0.1"
		_, err = source.Open("", o)
		checkSecret(t, "bad DSN", err, "In-dsn-pw-0815", "mysql: invalid DSN")
		o = opts
		o.Query = "SELEC 1"
		_, err = source.Open("", o)
		checkSecret(t, "bad query", err, dbtest.Password, name+": Error 1064")
		o.Query = "SELECT 1 AS a, 2 AS a"
		_, err = source.Open("", o)
		checkSecret(t, "duplicate columns", err, dbtest.Password, `duplicate column name "a"`)
	})
}
