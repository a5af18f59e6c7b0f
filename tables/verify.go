package tables

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// VerifyResult is the outcome of checking one artifact of a built
// directory.
type VerifyResult struct {
	Name string
	Kind Kind
	File string
	Rows int64
	Err  error // nil when the artifact is sound
}

// VerifyDir checks a directory built by Build: the manifest parses, and
// every artifact it names exists, has the recorded size, SHA256 and row
// count, and passes the full check of its format (every checksum and
// record). It returns one result per table, and an error naming every
// failure (or the manifest's problem).
func VerifyDir(dir string) ([]VerifyResult, error) {
	mp := filepath.Join(dir, ManifestName)
	m, err := ReadManifest(mp)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no %s (not a directory built by lut build)", dir, ManifestName)
		}
		return nil, err
	}
	var (
		out  []VerifyResult
		errs []error
	)
	for _, t := range m.Tables {
		r := VerifyResult{Name: t.Name, Kind: t.Kind, File: filepath.Join(dir, t.File)}
		r.Err = verifyArtifact(r.File, &t)
		if r.Err != nil {
			r.Err = fmt.Errorf("table %s: %s: %w", t.Name, r.File, r.Err)
			errs = append(errs, r.Err)
		} else {
			r.Rows = t.Rows
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

func verifyArtifact(path string, t *ManifestTable) error {
	fi, err := os.Stat(path)
	if err != nil {
		return unwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", describeMode(fi.Mode().Type()))
	}
	if fi.Size() != t.Size {
		return fmt.Errorf("size %d, the manifest says %d", fi.Size(), t.Size)
	}
	sum, _, err := fileSHA256(path)
	if err != nil {
		return err
	}
	if sum != t.SHA256 {
		return fmt.Errorf("digest mismatch: the file's sha256 is %s, the manifest says %s", sum, t.SHA256)
	}
	info, err := inspectArtifact(path, t.Kind, true)
	if err != nil {
		return trimPath(err, path)
	}
	if info.rows != t.Rows {
		return fmt.Errorf("%d rows, the manifest says %d", info.rows, t.Rows)
	}
	return nil
}
