package fsutil

import (
	"os"
	"sync"
)

// The temporary files in use in this process, so that a program ending on
// a signal can remove them (RemoveTemps) rather than leave them behind.
var temps struct {
	sync.Mutex
	paths map[string]int
}

// TrackTemp records path as a temporary file of this process until the
// returned function is called: RemoveTemps removes it meanwhile. path
// need not exist yet; a directory is removed with what it holds. WriteFile tracks its temporary files itself.
func TrackTemp(path string) (untrack func()) {
	temps.Lock()
	defer temps.Unlock()
	if temps.paths == nil {
		temps.paths = map[string]int{}
	}
	temps.paths[path]++
	return func() {
		temps.Lock()
		defer temps.Unlock()
		if temps.paths[path]--; temps.paths[path] <= 0 {
			delete(temps.paths, path)
		}
	}
}

// RemoveTemps removes every tracked temporary file and returns how many
// it removed. It is for a program about to exit on a signal: it keeps the
// registry locked, so that no WriteFile renames or untracks a file
// afterwards (they block until the program exits).
func RemoveTemps() int {
	temps.Lock()
	n := 0
	for p := range temps.paths {
		if os.Remove(p) == nil {
			n++
		} else if fi, err := os.Lstat(p); err == nil && fi.IsDir() && os.RemoveAll(p) == nil {
			n++
		}
	}
	return n
}
