package tables

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemovedDirectoryKeepsSet removes a watched directory of tables
// (os.RemoveAll: the files, then the directory): the set keeps serving
// the versions mapped, is never published emptier, reports the tables
// missing and counts the rejections; the directory back with a table
// loads it.
func TestRemovedDirectoryKeepsSet(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "live")
	must(t, os.Mkdir(dir, 0o755))
	compileVersion(t, filepath.Join(dir, "a.lut"), smallRows, 1)
	compileVersion(t, filepath.Join(dir, "b.lut"), smallRows, 1)
	log, logs := newTestLogger(t)
	set, err := Open(dir, Options{PollInterval: 10 * time.Millisecond, DataVerify: DataVerifyNone, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	stop := startReaders(t, set, "a", func() int { return 1 })
	must(t, os.RemoveAll(dir))
	waitFor(t, 10*time.Second, "the directory error", func() bool {
		return strings.Contains(set.Stats().LastRejection, "reading the directory")
	})
	time.Sleep(50 * time.Millisecond) // a few polls of the missing directory
	if n := stop(); n == 0 {
		t.Error("no lookups ran")
	}
	st := set.Stats()
	if st.Generation != 1 || st.Swaps != 1 || len(st.Tables) != 2 || !st.Tables[0].Missing || !st.Tables[1].Missing {
		t.Errorf("after the removal: %+v", st)
	}
	if st.Notify {
		t.Error("file notifications reported on for a removed directory")
	}
	sn := set.Acquire()
	for _, name := range []string{"a", "b"} {
		if v, err := lookupVersion(sn, name, 5); err != nil || v != 1 {
			t.Errorf("table %s after the removal: %d, %v", name, v, err)
		}
	}
	sn.Release()
	// One rejection for the directory, and one per table whose file was
	// seen gone while the directory was still there: never repeated by
	// the polls.
	if st.Rejections < 1 || st.Rejections > 3 {
		t.Errorf("%d rejections, want 1 to 3", st.Rejections)
	}
	if strings.Contains(logs.String(), "tables: published generation=2") {
		t.Errorf("a set was published after the removal:\n%s", logs)
	}
	// The directory back with a new version of a: published; b stays.
	tmp := filepath.Join(root, "new")
	must(t, os.Mkdir(tmp, 0o755))
	compileVersion(t, filepath.Join(tmp, "a.lut"), smallRows, 2)
	must(t, os.Rename(tmp, dir))
	waitFor(t, 10*time.Second, "version 2 of a", func() bool {
		sn := set.Acquire()
		defer sn.Release()
		v, err := lookupVersion(sn, "a", 5)
		return err == nil && v == 2
	})
	st = set.Stats()
	if st.Generation != 2 || len(st.Tables) != 2 || st.Tables[0].Missing || !st.Tables[1].Missing {
		t.Errorf("after the directory came back: %+v", st.Tables)
	}
	waitFor(t, 10*time.Second, "file notifications back", func() bool { return set.Stats().Notify })
	if !strings.Contains(logs.String(), "tables: the directory is back") {
		t.Errorf("the watch again not logged:\n%s", logs)
	}
}

// TestRemovedManifestDirectoryKeepsSet: the same for a manifest
// directory.
func TestRemovedManifestDirectoryKeepsSet(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "dist")
	must(t, os.Mkdir(dir, 0o755))
	putManifest(t, dir, writeManifestDir(t, dir, 1, "a", "b"))
	log, _ := newTestLogger(t)
	set, err := Open(dir, Options{PollInterval: 10 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	must(t, os.RemoveAll(dir))
	waitFor(t, 10*time.Second, "the rejection", func() bool { return set.Stats().Rejections > 0 })
	time.Sleep(50 * time.Millisecond)
	st := set.Stats()
	if st.Generation != 1 || len(st.Tables) != 2 || !st.Tables[0].Missing || !st.Tables[1].Missing {
		t.Errorf("after the removal: %+v", st)
	}
	sn := set.Acquire()
	if v, err := lookupVersion(sn, "b", 5); err != nil || v != 1 {
		t.Errorf("after the removal: %d, %v", v, err)
	}
	sn.Release()
	tmp := filepath.Join(root, "new")
	must(t, os.Mkdir(tmp, 0o755))
	putManifest(t, tmp, writeManifestDir(t, tmp, 2, "a", "b"))
	must(t, os.Rename(tmp, dir))
	waitFor(t, 10*time.Second, "version 2", func() bool {
		sn := set.Acquire()
		defer sn.Release()
		v, err := lookupVersion(sn, "b", 5)
		return err == nil && v == 2
	})
	if st := set.Stats(); st.Tables[0].Missing || st.Tables[1].Missing {
		t.Errorf("after the directory came back: %+v", st.Tables)
	}
}
