package tables

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// repair checks the cached artifacts of the current version against its
// manifest as published (size, SHA256, the format's full check) and
// fetches the bad ones again from the store: a cached file damaged on
// disk after it was verified (flipped bytes, a truncation) is put right
// instead of failing every start or staying damaged until a new version
// is published. With only, just the artifacts of those cache file names
// are checked. It returns how many artifacts were fetched again.
func (r *remote) repair(ctx context.Context, only map[string]bool) (int, error) {
	r.lock.mu.Lock()
	defer r.lock.mu.Unlock()
	digest := r.state.Current
	if digest == "" {
		return 0, nil
	}
	m, err := r.readVersion(digest)
	if err != nil {
		return 0, fmt.Errorf("tables cache %s: version %.16s: %w", r.o.CacheDir, digest, err)
	}
	n := 0
	for i := range m.Tables {
		t := &m.Tables[i]
		name := cacheFile(t)
		if only != nil && !only[name] {
			continue
		}
		final := filepath.Join(r.o.CacheDir, name)
		verr := r.verifyDownload(t, final)
		if verr == nil {
			continue
		}
		r.log.Warn("tables: cache: a cached artifact is damaged; fetching it again", "source", r.st.location(),
			"version", digest, "table", t.Name, "file", final, "reason", verr.Error())
		if err := os.Remove(final); err != nil && !os.IsNotExist(err) {
			r.fail(ReasonCache)
			return n, fmt.Errorf("tables cache %s: version %.16s: table %s: %w", r.o.CacheDir, digest, t.Name, err)
		}
		if err := r.fetchArtifact(ctx, t); err != nil {
			return n, fmt.Errorf("%s: version %.16s: table %s: artifact %s: fetching the damaged cached copy again: %w",
				r.st.location(), digest, t.Name, t.File, err)
		}
		n++
	}
	return n, nil
}
