//go:build linux

package tables

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// mountTmpfs mounts a tmpfs of size at dir until the test ends. Without
// root (or mount) the test fails under CI=true and skips elsewhere.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		testfiles.Missing(t, fmt.Sprintf("a tmpfs mounted by the test (run as root): mount: %v: %s", err, out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillTo writes a file into dir's file system until left bytes are
// free, and returns its path.
func fillTo(t *testing.T, dir string, left int64) string {
	t.Helper()
	var st syscall.Statfs_t
	must(t, syscall.Statfs(dir, &st))
	free := int64(st.Bavail) * st.Bsize
	if free <= left {
		t.Fatalf("%s has %d bytes free, fewer than %d", dir, free, left)
	}
	p := filepath.Join(dir, "filler")
	writeFile(t, p, make([]byte, (free-left)/4096*4096))
	return p
}

// partials lists the files of the cache's downloads in progress.
func partials(t *testing.T, cache string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(cache, cachePartial))
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestRemoteDiskFullRetriedAtNextCheck: a cache on a small tmpfs fills up
// in the middle of a download. The check fails (reason cache), the
// partial download is removed rather than left to keep the disk full, and
// once space is freed the very next check downloads the version: a local
// disk error is not remembered as a bad publish.
func TestRemoteDiskFullRetriedAtNextCheck(t *testing.T) {
	mnt := t.TempDir()
	mountTmpfs(t, mnt, "3m")
	cache := filepath.Join(mnt, "cache")
	srv := newStoreServer(t)
	srv.publish(1)
	set, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	m2 := srv.publish(2)
	a := m2.Tables[0]
	filler := fillTo(t, mnt, a.Size/2)

	err = set.Reload()
	if reason, _ := reasonOf(err); reason != ReasonCache || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("a check on a full disk: %v, want reason %q and ENOSPC", err, ReasonCache)
	}
	for _, want := range []string{srv.url(), a.Name, a.File} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
	if p := partials(t, cache); len(p) != 0 {
		t.Fatalf("the download that filled the disk is kept in .partial: %v", p)
	}
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d on a full disk, want 1", v)
	}

	must(t, os.Remove(filler))
	before := srv.count(a.File)
	if err := set.Reload(); err != nil {
		t.Fatalf("the first check after space was freed: %v", err)
	}
	if n := srv.count(a.File); n != before+1 {
		t.Fatalf("artifact %s: %d downloads by the check after space was freed, want 1", a.File, n-before)
	}
	if v := setVersion(t, set); v != 2 {
		t.Fatalf("version %d after space was freed, want 2", v)
	}
}

// TestRemoteForbiddenArtifactRetriedAtNextCheck: an artifact answered 403
// (credentials the store refused for that object) fails the check without
// a retry; once the store serves it, the next check takes the version.
func TestRemoteForbiddenArtifactRetriedAtNextCheck(t *testing.T) {
	srv := newStoreServer(t)
	set := openPublished(t, srv)
	m2 := writeVersion(t, srv.dir, 2)
	b := m2.Tables[1]
	srv.setStatus(b.File, http.StatusForbidden)
	srv.putManifest(m2)

	err := set.Reload()
	if reason, _ := reasonOf(err); reason != ReasonForbidden {
		t.Fatalf("an artifact answered 403: %v, want reason %q", err, ReasonForbidden)
	}
	if !strings.Contains(err.Error(), b.File) {
		t.Errorf("the error does not name the artifact %s: %v", b.File, err)
	}
	srv.setStatus(b.File, 0)
	if err := set.Reload(); err != nil {
		t.Fatalf("the first check after the store served the artifact: %v", err)
	}
	if v := setVersion(t, set); v != 2 {
		t.Fatalf("version %d, want 2", v)
	}
}

// TestRemoteRejectionEndsWithAnotherVersion: a version rejected for a
// missing artifact, then put right and published again after another
// manifest, is taken at the first check that finds it: after a version
// that installed, and after one that could not be fetched.
func TestRemoteRejectionEndsWithAnotherVersion(t *testing.T) {
	srv := newStoreServer(t)
	set := openPublished(t, srv)
	// publishMissing publishes a version whose artifact of table b is
	// missing (404), checks that it is rejected, and returns a function
	// that puts the artifact back.
	publishMissing := func(version int) (*Manifest, func()) {
		t.Helper()
		m := writeVersion(t, srv.dir, version)
		p := filepath.Join(srv.dir, m.Tables[1].File)
		b, err := os.ReadFile(p)
		must(t, err)
		must(t, os.Remove(p))
		srv.putManifest(m)
		if err := set.Reload(); err == nil {
			t.Fatalf("version %d with a missing artifact was accepted", version)
		} else if reason, _ := reasonOf(err); reason != ReasonNotFound {
			t.Fatalf("version %d: %v, want reason %q", version, err, ReasonNotFound)
		}
		return m, func() { writeFile(t, p, b) }
	}
	republish := func(m *Manifest, version int) {
		t.Helper()
		srv.putManifest(m)
		if err := set.Reload(); err != nil {
			t.Fatalf("version %d put right and published again: %v", version, err)
		}
		if v := setVersion(t, set); v != version {
			t.Fatalf("version %d, want %d", v, version)
		}
	}

	// A version installs in between.
	m2, fix2 := publishMissing(2)
	srv.publish(3)
	must(t, set.Reload())
	if v := setVersion(t, set); v != 3 {
		t.Fatalf("version %d, want 3", v)
	}
	fix2()
	republish(m2, 2)

	// A version that cannot be fetched (the store answers 500) in between.
	m4, fix4 := publishMissing(4)
	m5 := writeVersion(t, srv.dir, 5)
	srv.setStatus(m5.Tables[0].File, http.StatusInternalServerError)
	srv.putManifest(m5)
	if err := set.Reload(); err == nil {
		t.Fatal("version 5 installed although its artifact is answered 500")
	}
	fix4()
	republish(m4, 4)
}
