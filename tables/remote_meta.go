package tables

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// metaDamage is a cached copy of a version's manifest that is damaged on
// disk (bytes flipped, cut short, gone): the file and why.
type metaDamage struct {
	file string
	err  error
}

// versionFile is the cache's copy of version digest's manifest as
// published.
func (r *remote) versionFile(digest string) string {
	return filepath.Join(r.o.CacheDir, cacheVersions, digest+".json")
}

// readVersion reads the cache's copy of version digest's manifest as
// published. The copy must hash to digest: one damaged on disk is an
// error, never a manifest naming other tables or other files.
func (r *remote) readVersion(digest string) (*Manifest, error) {
	p := r.versionFile(digest)
	b, err := fsutil.ReadRegular(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, fsutil.UnwrapPath(err))
	}
	if sum := fsutil.BytesSHA256(b); sum != digest {
		return nil, fmt.Errorf("%s: damaged: %d bytes with sha256 %s, the version's is %s", p, len(b), sum, digest)
	}
	return ParseManifest(p, b)
}

// localDigest is the SHA256 state.json recorded for the cache's
// MANIFEST.json of version digest ("" when it records none).
func (r *remote) localDigest(digest string) string {
	for _, v := range r.state.Versions {
		if v.Digest == digest {
			return v.Local
		}
	}
	return ""
}

// checkMeta checks the cache's two copies of the current version's
// manifest: versions/DIGEST.json, as published, must hash to DIGEST, and
// MANIFEST.json, which the set loads, to the digest state.json recorded
// when it was written. It returns the damaged ones.
func (r *remote) checkMeta() []metaDamage {
	digest := r.state.Current
	if digest == "" {
		return nil
	}
	var bad []metaDamage
	mp := filepath.Join(r.o.CacheDir, ManifestName)
	if want := r.localDigest(digest); want != "" {
		b, err := fsutil.ReadRegular(mp)
		switch {
		case err != nil:
			bad = append(bad, metaDamage{file: mp, err: fsutil.UnwrapPath(err)})
		case fsutil.BytesSHA256(b) != want:
			bad = append(bad, metaDamage{file: mp, err: fmt.Errorf("%d bytes with sha256 %s, written with sha256 %s",
				len(b), fsutil.BytesSHA256(b), want)})
		}
	}
	if _, err := r.readVersion(digest); err != nil {
		msg := strings.TrimPrefix(err.Error(), r.versionFile(digest)+": ")
		bad = append(bad, metaDamage{file: r.versionFile(digest), err: errors.New(strings.TrimPrefix(msg, "damaged: "))})
	}
	return bad
}

// noteMeta takes bad as the damage of the current version's cached
// manifests, logging the damage not seen at the last check.
func (r *remote) noteMeta(bad []metaDamage) {
	seen := map[string]bool{}
	for _, d := range r.damaged {
		seen[d.file] = true
	}
	for _, d := range bad {
		if !seen[d.file] {
			r.log.Warn("tables: cache: a cached manifest is damaged; fetching it again from the store", "source", r.st.location(),
				"version", r.state.Current, "file", d.file, "reason", d.err.Error())
		}
	}
	r.damaged = bad
}

// manifestDamaged reports whether the cache's MANIFEST.json was found
// damaged: it is not loaded until it is fetched again.
func (r *remote) manifestDamaged() bool {
	for _, d := range r.damaged {
		if filepath.Base(d.file) == ManifestName {
			return true
		}
	}
	return false
}

// metaErr adds to err, a check that failed, the cached manifests it left
// damaged.
func (r *remote) metaErr(err error) error {
	if len(r.damaged) == 0 {
		return err
	}
	var sb strings.Builder
	for i, d := range r.damaged {
		if i > 0 {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%s: %v", d.file, d.err)
	}
	return fmt.Errorf("%w; the cached manifest of version %.16s is damaged and was not fetched again (%s): it is fetched at the next check the store answers",
		err, r.state.Current, sb.String())
}

// vouch checks that the manifest a remote set is about to load, with
// SHA256 digest, is one the cache wrote: a cached MANIFEST.json damaged
// on disk is refused rather than served, even when it parses. A digest
// this remote does not know is looked up in state.json too: another set
// on the cache may have installed a version since this one's last check.
func (r *remote) vouch(digest string) error {
	if r.published(digest) != "" {
		return nil
	}
	r.lock.mu.Lock()
	st, err := readState(r.o.CacheDir)
	r.lock.mu.Unlock()
	if err == nil && st.Source == r.st.location() {
		for _, v := range st.Versions {
			if v.Local == digest {
				return nil
			}
		}
	}
	return fmt.Errorf("damaged: its sha256 %s is not that of the manifest the cache wrote for version %.16s; "+
		"it is fetched again from the store at the next check", digest, r.state.Current)
}
