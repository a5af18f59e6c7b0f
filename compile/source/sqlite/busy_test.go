package sqlite_test

import (
	"database/sql"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile/source"
)

// TestSQLiteWaitsForWriter: a database another program is committing to
// (its transaction holds the lock that shuts readers out) is read once
// the writer is done, as SQLite's own tools wait, instead of failing
// with "database is locked".
func TestSQLiteWaitsForWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.db")
	makeSQLite(t, path, `CREATE TABLE t (id TEXT, v TEXT)`, `INSERT INTO t VALUES ('a', '1')`)
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range []string{`BEGIN EXCLUSIVE`, `INSERT INTO t VALUES ('b', '2')`} {
		if _, err := c.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	type result struct {
		rows int
		err  error
	}
	got := make(chan result, 1)
	go func() {
		r, err := source.Open(path, source.Options{})
		if err != nil {
			got <- result{err: err}
			return
		}
		defer r.Close()
		n := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				got <- result{n, err}
				return
			}
			n++
		}
		got <- result{rows: n}
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := c.ExecContext(t.Context(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.rows != 2 {
		t.Fatalf("read %d rows: %v", r.rows, r.err)
	}
}
