package tables

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// cacheLockName is the file of a cache directory that its holder locks.
const cacheLockName = ".lutcache.lock"

// cacheLock is this process's hold on a cache directory: an exclusive
// advisory lock on DIR/.lutcache.lock, so that a second process (another
// enrichd on the same cache_dir) is refused instead of truncating and
// removing the first one's downloads. Within the process it is shared by
// every remote set on the directory (the set a reload opens while the old
// one still serves), and its mu serialises their checks: one downloads
// while the other waits, then finds the version installed.
type cacheLock struct {
	key    string
	refs   int // under cacheLocksMu
	unlock func()

	mu sync.Mutex
	// installs counts the versions installed by the sets sharing the
	// lock (under mu): a set that sees it moved reads state.json again.
	installs uint64
}

var (
	cacheLocksMu sync.Mutex
	cacheLocks   = map[string]*cacheLock{}
)

// lockCache takes (or shares) the hold on the cache directory dir, which
// exists.
func lockCache(dir string) (*cacheLock, error) {
	key, err := filepath.Abs(dir)
	if err == nil {
		key, err = filepath.EvalSymlinks(key)
	}
	if err != nil {
		return nil, fmt.Errorf("tables cache %s: %w", dir, err)
	}
	cacheLocksMu.Lock()
	defer cacheLocksMu.Unlock()
	if l := cacheLocks[key]; l != nil {
		l.refs++
		return l, nil
	}
	unlock, err := fsutil.Lock(filepath.Join(key, cacheLockName))
	if errors.Is(err, fsutil.ErrLocked) {
		return nil, fmt.Errorf("tables cache %s: in use by another process (a cache_dir serves one enrichd at a time): %w", dir, err)
	} else if err != nil {
		return nil, fmt.Errorf("tables cache %s: %w", dir, err)
	}
	l := &cacheLock{key: key, refs: 1, unlock: unlock}
	cacheLocks[key] = l
	return l, nil
}

// release drops one set's share of the hold; the last one unlocks.
func (l *cacheLock) release() {
	cacheLocksMu.Lock()
	defer cacheLocksMu.Unlock()
	l.refs--
	if l.refs == 0 {
		delete(cacheLocks, l.key)
		l.unlock()
	}
}
