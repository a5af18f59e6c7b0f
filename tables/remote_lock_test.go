//go:build unix

package tables

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// TestRemoteCacheHeldByAnotherProcess: while another process holds a
// cache directory (a second enrichd on the same cache_dir), a set on it
// is refused, with an error naming the directory; once that process is
// gone, the set opens.
func TestRemoteCacheHeldByAnotherProcess(t *testing.T) {
	srv := newStoreServer(t)
	srv.publish(1)
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LUTKIT_TEST_HOLD_CACHE="+cache, "LUTKIT_TEST_HOLD_URL="+srv.url())
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("the other process: %q, %v", line, err)
	}

	set, err := Open(srv.url(), remoteOpts(cache))
	if err == nil {
		set.Close()
		t.Fatal("a set opened on a cache directory another process holds")
	}
	if !strings.Contains(err.Error(), cache) || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("the error does not name the directory and say why: %v", err)
	}
	t.Logf("refused: %v", err)

	stdin.Close() // the other process closes its set and exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	set, err = Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatalf("open after the other process exited: %v", err)
	}
	defer set.Close()
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
}

// TestRemoteSharedCacheSlowDownload: a second set opened on the cache
// directory of a set that is downloading a version (what a reload of
// enrichd's tables does: the new set opens while the old one serves) does
// not download into the same files: it waits for the download, then
// serves the version the first one installed. Every artifact is
// downloaded once and intact, and the second set goes on alone after the
// first is closed.
func TestRemoteSharedCacheSlowDownload(t *testing.T) {
	srv := newStoreServer(t)
	srv.publish(1)
	cache := t.TempDir()
	old, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	srv.mu.Lock()
	srv.slow = 5 * time.Millisecond
	srv.mu.Unlock()
	m2 := srv.publish(2)
	done := make(chan error, 1)
	go func() { done <- old.Reload() }()
	waitFor(t, 10*time.Second, "the old set's download", func() bool { return srv.slowStarted.Load() > 0 })

	cur, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatalf("a second set on the cache during a download: %v", err)
	}
	defer cur.Close()
	if err := <-done; err != nil {
		t.Fatalf("the old set's check: %v", err)
	}
	for _, tb := range m2.Tables {
		if n := srv.count(tb.File); n != 1 {
			t.Errorf("artifact %s downloaded %d times, want 1", tb.File, n)
		}
		sum, _, err := fsutil.FileSHA256(filepath.Join(cache, cacheFile(&tb)))
		if err != nil || sum != tb.SHA256 {
			t.Errorf("cached artifact %s: sha256 %s, %v", tb.File, sum, err)
		}
	}

	for i, set := range []*Set{old, cur} {
		if v := setVersion(t, set); v != 2 {
			t.Fatalf("set %d: version %d, want 2", i+1, v)
		}
	}
	srv.mu.Lock()
	srv.slow = 0
	srv.mu.Unlock()
	old.Close()
	srv.publish(3)
	if err := cur.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := setVersion(t, cur); v != 3 {
		t.Fatalf("version %d after the old set closed, want 3", v)
	}
}
