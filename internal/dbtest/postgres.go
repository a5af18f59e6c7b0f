package dbtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// Postgres is a running PostgreSQL server.
type Postgres struct {
	Port int
	// URL connects as User to Database, without the password.
	URL string
}

// StartPostgres starts a PostgreSQL server for the test, with User (its
// password Password) owning Database.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		testfiles.Missing(tb, "PostgreSQL server (/usr/lib/postgresql/*/bin/postgres, Debian package postgresql)")
	}
	slices.Sort(bins)
	bin := bins[len(bins)-1]
	initdb := filepath.Join(filepath.Dir(bin), "initdb")

	dir := tempDir(tb, "lutkit-pg-")
	data := filepath.Join(dir, "data")
	pwfile := filepath.Join(dir, "pw")
	writeFile(tb, pwfile, Password+"\n")
	attr := unprivileged(tb, dir, pwfile)
	cmd := exec.Command(initdb, "-D", data, "-U", User, "--pwfile="+pwfile, "--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync")
	cmd.SysProcAttr = attr
	run(tb, cmd)

	port := freePort(tb)
	cmd = exec.Command(bin, "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "synchronous_commit=off", "-c", "max_connections=20", "-c", "shared_buffers=32MB")
	cmd.SysProcAttr = attr
	srv := start(tb, cmd, os.Interrupt) // SIGINT: fast shutdown

	p := &Postgres{Port: port}
	admin := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", User, port)
	srv.waitReady(tb, func() error {
		conn, err := connect(admin)
		if err == nil {
			conn.Close(context.Background())
		}
		return err
	})
	p.Exec(tb, admin, "CREATE DATABASE "+Database)
	p.URL = fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, port, Database)
	return p
}

func connect(url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.Password = Password
	cfg.ConnectTimeout = 10 * time.Second
	return pgx.ConnectConfig(context.Background(), cfg)
}

// Exec runs statements on the server's database, or on the database
// that url names when url is not empty.
func (p *Postgres) Exec(tb testing.TB, url string, stmts ...string) {
	tb.Helper()
	if url == "" {
		url = p.URL
	}
	conn, err := connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			tb.Fatalf("%.200s: %v", s, err)
		}
	}
}

// Conn opens a connection to the test database, closed at cleanup.
func (p *Postgres) Conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := connect(p.URL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
