package dbtest

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// MariaDB is a running MariaDB server.
type MariaDB struct {
	Port int
	// DSN connects as User to Database over TCP, without the password.
	DSN string
}

// StartMariaDB starts a MariaDB server for the test, with User (its
// password Password) granted all of Database (utf8mb4).
func StartMariaDB(tb testing.TB) *MariaDB {
	tb.Helper()
	var bins [2]string
	for i, name := range []string{"mariadbd", "mariadb-install-db"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if _, serr := os.Stat("/usr/sbin/" + name); serr == nil {
				p = "/usr/sbin/" + name
			} else {
				testfiles.Missing(tb, name+" (Debian package mariadb-server)")
			}
		}
		bins[i] = p
	}
	dir := tempDir(tb, "lutkit-my-")
	data := filepath.Join(dir, "data")
	sock := filepath.Join(dir, "sock")
	var userArgs []string
	if os.Geteuid() == 0 {
		userArgs = []string{"--user=root"}
	}
	run(tb, exec.Command(bins[1], append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, userArgs...)...))

	port := freePort(tb)
	cmd := exec.Command(bins[0], append([]string{"--no-defaults", "--datadir=" + data, "--socket=" + sock,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--pid-file=" + filepath.Join(dir, "pid"), "--innodb-buffer-pool-size=64M",
		"--innodb-flush-log-at-trx-commit=0", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin"}, userArgs...)...)
	srv := start(tb, cmd, syscall.SIGTERM)

	rootCfg := mysql.NewConfig()
	rootCfg.User, rootCfg.Net, rootCfg.Addr = "root", "unix", sock
	root := rootCfg.FormatDSN()
	srv.waitReady(tb, func() error {
		db, err := sql.Open("mysql", root)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	})
	m := &MariaDB{Port: port}
	m.exec(tb, root,
		"CREATE DATABASE "+Database+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", User, Password),
		fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%%'", Database, User))
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = User, "tcp", fmt.Sprintf("127.0.0.1:%d", port), Database
	m.DSN = cfg.FormatDSN()
	return m
}

func (m *MariaDB) exec(tb testing.TB, dsn string, stmts ...string) {
	tb.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			tb.Fatalf("%.200s: %v", s, err)
		}
	}
}

// DB opens the test database as User, closed at cleanup.
func (m *MariaDB) DB(tb testing.TB) *sql.DB {
	tb.Helper()
	cfg, err := mysql.ParseDSN(m.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Passwd = Password
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Exec runs statements on the test database as User.
func (m *MariaDB) Exec(tb testing.TB, stmts ...string) {
	tb.Helper()
	db := m.DB(tb)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			tb.Fatalf("%.200s: %v", s, err)
		}
	}
}
