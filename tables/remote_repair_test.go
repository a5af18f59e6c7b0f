package tables

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// TestRemoteDamagedCacheRepairedAtStart: a cached artifact of the current
// version with bytes flipped on disk while the node was down does not
// stop the next start: it fails its checks, is fetched again from the
// store, and the version is served. With the store down as well, the
// start fails and says both why the cache did not load and why it could
// not be repaired.
func TestRemoteDamagedCacheRepairedAtStart(t *testing.T) {
	srv := newStoreServer(t)
	m := srv.publish(1)
	cache := t.TempDir()
	set, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	set.Close()
	a := m.Tables[0]
	cached := filepath.Join(cache, cacheFile(&a))
	flip := func() {
		t.Helper()
		b, err := os.ReadFile(cached)
		must(t, err)
		for i := len(b) / 2; i < len(b)/2+4; i++ {
			b[i] ^= 0xff
		}
		writeFile(t, cached, b)
	}
	flip()

	set, err = Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatalf("open with a damaged cached artifact and the store up: %v", err)
	}
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	if n := srv.count(a.File); n != 2 {
		t.Fatalf("artifact %s downloaded %d times, want 2 (once more to repair the cache)", a.File, n)
	}
	if sum, _, err := fsutil.FileSHA256(cached); err != nil || sum != a.SHA256 {
		t.Fatalf("the cached artifact after the repair: sha256 %s, %v", sum, err)
	}
	set.Close()

	flip()
	srv.stop()
	set, err = Open(srv.url(), remoteOpts(cache))
	if err == nil {
		set.Close()
		t.Fatal("open with a damaged cached artifact and the store down succeeded")
	}
	for _, want := range []string{"digest", "repairing the cache", srv.url(), a.File} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestRemoteDamagedTableFetchedAgain: a cached artifact truncated in place
// while served faults a lookup and marks its table damaged; the next
// check, though the manifest is unchanged, fetches the artifact again and
// the table is served whole.
func TestRemoteDamagedTableFetchedAgain(t *testing.T) {
	srv := newStoreServer(t)
	m := srv.publish(1)
	cache := t.TempDir()
	set, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if n, f := lookupAll(t, set, "a"); n != smallRows || f != "" {
		t.Fatalf("before the truncation: %d rows found, fault %q", n, f)
	}
	a := m.Tables[0]
	cached := filepath.Join(cache, cacheFile(&a))
	must(t, os.Truncate(cached, a.Size/2))
	if _, f := lookupAll(t, set, "a"); f != "a" {
		t.Fatalf("after the truncation: fault %q, want a fault in a", f)
	}
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if n, f := lookupAll(t, set, "a"); n != smallRows || f != "" {
		t.Fatalf("after the next check: %d rows found, fault %q, want %d and none", n, f, smallRows)
	}
	if n := srv.count(a.File); n != 2 {
		t.Fatalf("artifact %s downloaded %d times, want 2", a.File, n)
	}
	if st := set.Stats().Remote; st.NotModified != 1 {
		t.Fatalf("the check found the manifest unchanged %d times, want 1", st.NotModified)
	}
}
