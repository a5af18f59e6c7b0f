package tables

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// renameTableA changes the name of table a in the manifest at path to c,
// in place: the file still parses, and names a table the version lacks.
func renameTableA(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	i := bytes.Index(b, []byte(`"name": "a"`))
	if i < 0 {
		t.Fatalf("%s names no table a:\n%s", path, b)
	}
	b[i+len(`"name": "`)] = 'c'
	writeFile(t, path, b)
}

// truncateHalf cuts the file at path to half its size, in place.
func truncateHalf(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, fi.Size()/2))
}

// openLogged opens a set on url with cache, logging into the buffer it
// returns.
func openLogged(t *testing.T, url, cache string) (*Set, *logBuffer, error) {
	t.Helper()
	log, buf := newTestLogger(t)
	opts := remoteOpts(cache)
	opts.Logger = log
	set, err := Open(url, opts)
	return set, buf, err
}

// tableNames returns the tables of the set's current snapshot.
func tableNames(set *Set) []string {
	snap := set.Acquire()
	defer snap.Release()
	var names []string
	for _, e := range snap.list {
		names = append(names, e.name)
	}
	return names
}

// TestRemoteDamagedManifestFetchedAgainAtStart: a cached MANIFEST.json
// damaged while the node was down (a byte flipped that renames table a
// to c, still a valid manifest) is not served: the next start finds it
// does not match what the cache wrote, logs it, fetches the version's
// manifest from the store again and serves tables a and b. With the
// store down as well, the start fails and names the damaged file.
func TestRemoteDamagedManifestFetchedAgainAtStart(t *testing.T) {
	srv := newStoreServer(t)
	srv.publish(1)
	cache := t.TempDir()
	set, err := Open(srv.url(), remoteOpts(cache))
	must(t, err)
	set.Close()
	mp := filepath.Join(cache, ManifestName)
	good, err := os.ReadFile(mp)
	must(t, err)
	renameTableA(t, mp)

	notMod := srv.notMod.Load()
	set, buf, err := openLogged(t, srv.url(), cache)
	if err != nil {
		t.Fatalf("open with a damaged cached manifest and the store up: %v", err)
	}
	if names := tableNames(set); strings.Join(names, ",") != "a,b" {
		t.Fatalf("tables served %v, want a and b", names)
	}
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	if n := srv.notMod.Load() - notMod; n != 0 {
		t.Fatalf("the manifest was asked for conditionally: %d answers not modified", n)
	}
	if b, _ := os.ReadFile(mp); !bytes.Equal(b, good) {
		t.Fatalf("%s was not put right:\n%s", mp, b)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "file="+mp) {
		t.Fatalf("no warning names %s:\n%s", mp, buf.String())
	}
	set.Close()

	truncateHalf(t, mp)
	srv.stop()
	set, err = Open(srv.url(), remoteOpts(cache))
	if err == nil {
		names := tableNames(set)
		set.Close()
		t.Fatalf("open with a damaged cached manifest and the store down served %v", names)
	}
	for _, want := range []string{mp, "damaged", srv.url(), "connection refused", "start again once the store answers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestRemoteDamagedVersionFetchedAgainAtStart: the cached copy of the
// current version's manifest as published (versions/DIGEST.json), cut
// short while the node was down, is fetched again at the next start, so
// that a damaged artifact can still be fetched again from the store.
// With the store down, the node serves the version (its MANIFEST.json is
// intact) and its stale reason names the damaged file.
func TestRemoteDamagedVersionFetchedAgainAtStart(t *testing.T) {
	srv := newStoreServer(t)
	m := srv.publish(1)
	cache := t.TempDir()
	set, err := Open(srv.url(), remoteOpts(cache))
	must(t, err)
	digest := set.Stats().Remote.Version
	set.Close()
	vp := filepath.Join(cache, cacheVersions, digest+".json")
	a := m.Tables[0]
	truncateHalf(t, vp)
	truncateHalf(t, filepath.Join(cache, cacheFile(&a)))

	set, buf, err := openLogged(t, srv.url(), cache)
	if err != nil {
		t.Fatalf("open with a damaged cached version and artifact, the store up: %v", err)
	}
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	if sum, _, err := fsutil.FileSHA256(vp); err != nil || sum != digest {
		t.Fatalf("%s after the start: sha256 %s, %v; want %s", vp, sum, err, digest)
	}
	if !strings.Contains(buf.String(), "file="+vp) {
		t.Fatalf("no warning names %s:\n%s", vp, buf.String())
	}
	set.Close()

	truncateHalf(t, vp)
	srv.stop()
	set, err = Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatalf("open with a damaged cached version, an intact MANIFEST.json and the store down: %v", err)
	}
	defer set.Close()
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	if r := set.Stats().Remote; !r.Stale || !strings.Contains(r.StaleReason, vp) {
		t.Fatalf("stale %v, reason %q: want it to name %s", r.Stale, r.StaleReason, vp)
	}
}

// TestRemoteDamagedManifestNotServed: while the node serves, its cached
// MANIFEST.json is damaged (table a renamed to c) and a lookup in table
// a faults on a file changed in place. With the store down, the next
// check does not load the damaged manifest: no table c is ever served.
// Once the store answers, the manifest is fetched again and a and b are
// served whole.
func TestRemoteDamagedManifestNotServed(t *testing.T) {
	srv := newStoreServer(t)
	m := srv.publish(1)
	cache := t.TempDir()
	set, buf, err := openLogged(t, srv.url(), cache)
	must(t, err)
	defer set.Close()
	mp := filepath.Join(cache, ManifestName)
	renameTableA(t, mp)
	// A fault in a: the artifact cut short, then written back whole in
	// place, so that a check finds it sound and loads the manifest again.
	a := m.Tables[0]
	cached := filepath.Join(cache, cacheFile(&a))
	whole, err := os.ReadFile(cached)
	must(t, err)
	must(t, os.Truncate(cached, a.Size/2))
	if _, f := lookupAll(t, set, "a"); f != "a" {
		t.Fatalf("after the truncation: fault %q, want a fault in a", f)
	}
	must(t, os.WriteFile(cached, whole, 0o644))

	addr := srv.addr
	srv.stop()
	err = set.Reload()
	if names := tableNames(set); strings.Join(names, ",") != "a,b" {
		t.Fatalf("tables served %v, want a and b", names)
	}
	if err == nil || !strings.Contains(err.Error(), mp) {
		t.Fatalf("the check with the store down: %v; want it to name %s", err, mp)
	}
	if !strings.Contains(buf.String(), "file="+mp) {
		t.Fatalf("no warning names %s:\n%s", mp, buf.String())
	}

	srv.start(addr)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if names := tableNames(set); strings.Join(names, ",") != "a,b" {
		t.Fatalf("tables served %v, want a and b", names)
	}
	if n, f := lookupAll(t, set, "a"); n != smallRows || f != "" {
		t.Fatalf("after the store came back: %d rows found, fault %q, want %d and none", n, f, smallRows)
	}
	if st, err := readState(cache); err != nil || fileDigest(t, mp) != st.Versions[0].Local {
		t.Fatalf("%s was not put right (%v)", mp, err)
	}
}

// TestRemoteDamagedPreviousVersionDropped: the cached manifest of a
// previous version, damaged, cannot be fetched again (the store serves
// only its current manifest): the next install no longer keeps that
// version, says so naming the file, and going back to the version
// downloads it again.
func TestRemoteDamagedPreviousVersionDropped(t *testing.T) {
	srv := newStoreServer(t)
	m1 := srv.publish(1)
	cache := t.TempDir()
	set, buf, err := openLogged(t, srv.url(), cache)
	must(t, err)
	defer set.Close()
	v1 := set.Stats().Remote.Version
	srv.publish(2)
	must(t, set.Reload())
	vp := filepath.Join(cache, cacheVersions, v1+".json")
	renameTableA(t, vp)
	srv.publish(3)
	must(t, set.Reload())
	if !strings.Contains(buf.String(), "file="+vp) {
		t.Fatalf("no warning names %s:\n%s", vp, buf.String())
	}
	if _, err := os.Stat(vp); !os.IsNotExist(err) {
		t.Fatalf("%s: still there (%v)", vp, err)
	}
	st, err := readState(cache)
	must(t, err)
	for _, v := range st.Versions {
		if v.Digest == v1 {
			t.Fatalf("state.json still keeps version %.16s", v1)
		}
	}
	downloads := srv.count(m1.Tables[0].File)
	srv.putManifest(m1)
	must(t, set.Reload())
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d after going back, want 1", v)
	}
	if n := srv.count(m1.Tables[0].File); n != downloads+1 {
		t.Fatalf("artifact %s downloaded %d times going back, want once", m1.Tables[0].File, n-downloads)
	}
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	sum, _, err := fsutil.FileSHA256(path)
	must(t, err)
	return sum
}
