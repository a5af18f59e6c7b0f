package tables

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoteCacheLeftoversRemoved: the temporary files of writes of the
// cache's manifests and state that a crash interrupted are removed when
// the cache is opened again; other files stay.
func TestRemoteCacheLeftoversRemoved(t *testing.T) {
	srv := newStoreServer(t)
	srv.publish(1)
	cache := t.TempDir()
	set, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	set.Close()
	leftovers := []string{
		filepath.Join(cache, ".MANIFEST.json.tmp-123456"),
		filepath.Join(cache, ".state.json.tmp-987654"),
		filepath.Join(cache, cacheVersions, "."+strings.Repeat("ab", 32)+".json.tmp-42"),
	}
	kept := filepath.Join(cache, "notes.tmp-1")
	for _, p := range append(leftovers, kept) {
		writeFile(t, p, []byte("{"))
	}
	set, err = Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a file of someone else's was removed: %v", err)
	}
}
