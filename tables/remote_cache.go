package tables

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// The cache directory of a remote set holds:
//
//	SHA256.lut, SHA256.mmdb   verified artifacts, named by their full digest
//	MANIFEST.json             the current version, naming those files
//	versions/DIGEST.json      the manifests of the kept versions, as published
//	state.json                the current version, validators, history
//	.partial/                 downloads in progress (resumed by the next try)
//
// An artifact is renamed into the cache only after its digest and its
// structure were checked and its bytes synced to disk, so its presence
// means it is sound: whether a manifest's artifact must be downloaded is
// a name lookup. MANIFEST.json and the current version's
// versions/DIGEST.json are checked at every check against the digest
// state.json recorded and the one in the name (remote_meta.go): a damaged
// one is never loaded, and is fetched again from the store.
const (
	cacheState    = "state.json"
	cacheVersions = "versions"
	cachePartial  = ".partial"
)

// cacheFile is the cache's name of an artifact.
func cacheFile(t *ManifestTable) string { return t.SHA256 + t.Kind.Ext() }

// remoteState is state.json.
type remoteState struct {
	Source string `json:"source"`
	// Current is the SHA256 of the published manifest now served.
	Current   string    `json:"current"`
	Validator validator `json:"validator"`
	// CheckedAt is the last successful check of the store.
	CheckedAt time.Time `json:"checked_at"`
	// Versions lists the kept versions, newest first.
	Versions []cachedVersion `json:"versions"`
}

type cachedVersion struct {
	Digest string `json:"digest"`
	// Local is the SHA256 of the cache's MANIFEST.json for the version.
	Local       string    `json:"local"`
	Generated   time.Time `json:"generated"`
	InstalledAt time.Time `json:"installed_at"`
}

func readState(dir string) (remoteState, error) {
	var st remoteState
	b, err := os.ReadFile(filepath.Join(dir, cacheState))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(dir, cacheState), err)
	}
	return st, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFile(path, func(f *os.File) error {
		_, err := f.Write(append(b, '\n'))
		return err
	})
}

func writeBytes(path string, b []byte) error {
	return fsutil.WriteFile(path, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// prepareCache creates the cache's directories.
func prepareCache(dir string) error {
	for _, d := range []string{dir, filepath.Join(dir, cacheVersions), filepath.Join(dir, cachePartial)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("tables cache: %w", err)
		}
	}
	return nil
}

// removeLeftovers removes the temporary files of writes of MANIFEST.json,
// state.json and versions/*.json a crash interrupted (.NAME.tmp-*):
// nothing else writes the cache while its lock is held and its mu taken.
func (r *remote) removeLeftovers() {
	for _, dir := range []string{r.o.CacheDir, filepath.Join(r.o.CacheDir, cacheVersions)} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			base, _, ok := strings.Cut(n, ".tmp-")
			if !ok || !e.Type().IsRegular() || !strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".json") {
				continue
			}
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				r.log.Warn("tables: cache: removing a leftover temporary file", "file", filepath.Join(dir, n), "reason", err.Error())
			}
		}
	}
}

// install makes m (published as raw, with SHA256 digest) the cache's
// current version: the published manifest is kept under versions/, the
// manifest naming the cached files becomes MANIFEST.json, state.json
// records it, and versions beyond the keep count are removed with the
// artifacts only they named. Every artifact of m is in the cache.
func (r *remote) install(m *Manifest, raw []byte, digest string, v validator, now time.Time) error {
	dir := r.o.CacheDir
	if err := writeBytes(filepath.Join(dir, cacheVersions, digest+".json"), raw); err != nil {
		return err
	}
	local := *m
	local.Tables = slices.Clone(m.Tables)
	for i := range local.Tables {
		local.Tables[i].File = cacheFile(&local.Tables[i])
	}
	lb, err := json.MarshalIndent(&local, "", "  ")
	if err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, ManifestName), lb); err != nil {
		return err
	}
	st := r.state
	st.Source, st.Current, st.Validator, st.CheckedAt = r.st.location(), digest, v, now
	vers := []cachedVersion{{Digest: digest, Local: fsutil.BytesSHA256(lb), Generated: m.Generated, InstalledAt: now}}
	for _, old := range st.Versions {
		if old.Digest != digest {
			vers = append(vers, old)
		}
	}
	if len(vers) > r.o.keep()+1 {
		vers = vers[:r.o.keep()+1]
	}
	st.Versions = vers
	if err := writeJSON(filepath.Join(dir, cacheState), &st); err != nil {
		return err
	}
	r.mu.Lock()
	r.state = st
	r.mu.Unlock()
	r.lock.installs++
	r.installs = r.lock.installs
	r.prune()
	return nil
}

// published maps the digest of a cached MANIFEST.json to the digest of
// the manifest as published ("" when unknown).
func (r *remote) published(local string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.state.Versions {
		if v.Local == local {
			return v.Digest
		}
	}
	return ""
}

// prune removes the manifests of versions no longer kept and every cached
// artifact none of the kept versions names. Files still mapped by a
// snapshot stay readable until it is released.
func (r *remote) prune() {
	dir := r.o.CacheDir
	keep := map[string]bool{}
	keepName := map[string]bool{} // artifact names as published
	keepVer := map[string]bool{}
	var dropped []string
	for _, v := range r.state.Versions {
		m, err := r.readVersion(v.Digest)
		if err != nil && v.Digest != r.state.Current {
			// The store serves only its current manifest: a previous
			// version whose cached copy is damaged cannot be put right,
			// so it is no longer kept (going back to it downloads it).
			r.log.Warn("tables: cache: the cached manifest of a previous version is damaged; the version is no longer kept",
				"version", v.Digest, "file", r.versionFile(v.Digest), "reason", err.Error())
			dropped = append(dropped, v.Digest)
			continue
		}
		keepVer[v.Digest+".json"] = true
		if err != nil {
			r.log.Warn("tables: cache: a kept version is unreadable", "version", v.Digest, "reason", err.Error())
			continue
		}
		for i := range m.Tables {
			keep[cacheFile(&m.Tables[i])] = true
			keepName[m.Tables[i].File] = true
		}
	}
	if len(dropped) > 0 {
		st := r.state
		st.Versions = slices.DeleteFunc(slices.Clone(st.Versions), func(v cachedVersion) bool { return slices.Contains(dropped, v.Digest) })
		if err := writeJSON(filepath.Join(dir, cacheState), &st); err != nil {
			r.log.Warn("tables: cache: writing the state", "file", filepath.Join(dir, cacheState), "reason", err.Error())
		} else {
			r.mu.Lock()
			r.state = st
			r.mu.Unlock()
		}
	}
	// The per-artifact download counts of versions no longer kept go
	// too: the map does not grow with every version ever served.
	r.mu.Lock()
	for f := range r.stats.DownloadsByFile {
		if !keepName[f] {
			delete(r.stats.DownloadsByFile, f)
		}
	}
	r.mu.Unlock()
	if ents, err := os.ReadDir(filepath.Join(dir, cacheVersions)); err == nil {
		for _, e := range ents {
			if !keepVer[e.Name()] {
				os.Remove(filepath.Join(dir, cacheVersions, e.Name()))
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || keep[n] || !isCacheArtifact(n) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("tables: cache: removing an old artifact", "file", n, "reason", err.Error())
		}
	}
	// Partial downloads of artifacts of no kept version and no pending
	// download.
	if ents, err := os.ReadDir(filepath.Join(dir, cachePartial)); err == nil {
		for _, e := range ents {
			if !keep[e.Name()] && !r.pending[e.Name()] {
				os.Remove(filepath.Join(dir, cachePartial, e.Name()))
			}
		}
	}
}

// isCacheArtifact reports whether n is a cached artifact's name.
func isCacheArtifact(n string) bool {
	ext := filepath.Ext(n)
	return (ext == ".lut" || ext == ".mmdb") && hexDigestRE.MatchString(strings.TrimSuffix(n, ext))
}
