package dbtest_test

import (
	"context"
	"testing"

	"github.com/lutkit/lutkit/internal/dbtest"
)

// TestServers starts each server and reads back what the test user wrote.
func TestServers(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		p := dbtest.StartPostgres(t)
		p.Exec(t, "", "CREATE TABLE t (v text)", "INSERT INTO t VALUES ('é')")
		var v string
		if err := p.Conn(t).QueryRow(context.Background(), "SELECT v FROM t").Scan(&v); err != nil || v != "é" {
			t.Errorf("read %q, %v", v, err)
		}
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		m := dbtest.StartMariaDB(t)
		m.Exec(t, "CREATE TABLE t (v text)", "INSERT INTO t VALUES ('🚀')")
		var v string
		if err := m.DB(t).QueryRow("SELECT v FROM t").Scan(&v); err != nil || v != "🚀" {
			t.Errorf("read %q, %v", v, err)
		}
	})
}
