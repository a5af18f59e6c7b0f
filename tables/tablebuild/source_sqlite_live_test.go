package tablebuild

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestBuildLiveSQLite: a SQLite source another program writes while the
// table is built from it builds (SQLite's reader reads one snapshot);
// only a file written in place whose reader has no snapshot is refused
// (TestBuildSourceRewrittenMeanwhile).
func TestBuildLiveSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inventory.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE assets (id TEXT PRIMARY KEY, owner TEXT)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	const rows = 200000
	for i := range rows {
		if _, err := tx.Exec("INSERT INTO assets VALUES (?, ?)", fmt.Sprintf("a%d", i), fmt.Sprintf("o%d", i%97)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(filepath.Join(dir, "tables.yaml"), []byte("tables:\n  - name: assets\n    sources: [{path: inventory.db, sqlite_table: assets}]\n    key: id\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The application writes the database throughout the build (a
	// commit the build's reader holds off fails and is tried again).
	var stop, commits atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; stop.Load() == 0; i++ {
			if _, err := db.Exec("INSERT INTO assets VALUES (?, 'late')", fmt.Sprintf("late%d", i)); err == nil {
				commits.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for commits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	res, err := Build(context.Background(), cfg, filepath.Join(dir, "dist"), Options{Jobs: 1})
	stop.Store(1)
	<-done
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if e := res.Manifest.Table("assets"); e.Rows < rows {
		t.Fatalf("%d rows, want %d or more", e.Rows, rows)
	}
	t.Logf("%d commits during the build", commits.Load())
}
