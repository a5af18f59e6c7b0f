package tables

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lutkit/lutkit/format/delta"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
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

// VerifyDir checks a directory built by Build: the manifest parses and
// lists at least one table, and every artifact it names exists, has the recorded size, SHA256 and row
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
	if len(m.Tables) == 0 {
		return nil, fmt.Errorf("%s: lists no tables: a node that loaded it would serve none and miss every lookup (build the set from a tables.yaml that declares its tables)", mp)
	}
	var (
		out  []VerifyResult
		errs []error
	)
	for _, t := range m.Tables {
		r := VerifyResult{Name: t.Name, Kind: t.Kind, File: filepath.Join(dir, t.File)}
		r.Err = verifyArtifact(r.File, &t)
		if r.Err == nil && t.Delta != nil {
			r.Err = verifyDelta(filepath.Join(dir, t.Delta.File), &t)
		}
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
		return fsutil.UnwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fsutil.DescribeMode(fi.Mode().Type()))
	}
	if fi.Size() != t.Size {
		return fmt.Errorf("size %d, the manifest says %d", fi.Size(), t.Size)
	}
	sum, _, err := fsutil.FileSHA256(path)
	if err != nil {
		return err
	}
	if sum != t.SHA256 {
		return fmt.Errorf("digest mismatch: the file's sha256 is %s, the manifest says %s", sum, t.SHA256)
	}
	info, err := InspectArtifact(path, t.Kind)
	if err != nil {
		return trimPath(err, path)
	}
	if info.Rows != t.Rows {
		return fmt.Errorf("%d rows, the manifest says %d", info.Rows, t.Rows)
	}
	return nil
}

// verifyDelta checks a table's delta file: size, SHA256, and a header
// that names the manifest's base and artifact.
func verifyDelta(path string, t *ManifestTable) error {
	b, err := fsutil.ReadRegular(path)
	if err != nil {
		return fmt.Errorf("delta %s: %w", t.Delta.File, fsutil.UnwrapPath(err))
	}
	if int64(len(b)) != t.Delta.Size {
		return fmt.Errorf("delta %s: size %d, the manifest says %d", t.Delta.File, len(b), t.Delta.Size)
	}
	if sum := fsutil.BytesSHA256(b); sum != t.Delta.SHA256 {
		return fmt.Errorf("delta %s: digest mismatch: the file's sha256 is %s, the manifest says %s", t.Delta.File, sum, t.Delta.SHA256)
	}
	h, err := delta.ParseHeader(b, int64(len(b)))
	if err != nil {
		return fmt.Errorf("delta %s: %w", t.Delta.File, err)
	}
	if h.BaseSHA256() != t.Delta.BaseSHA256 || h.TargetSHA256() != t.SHA256 || int64(h.BaseSize) != t.Delta.BaseSize || int64(h.TargetSize) != t.Size {
		return fmt.Errorf("delta %s: it rebuilds %.16s from %.16s, the manifest says %.16s from %.16s",
			t.Delta.File, h.TargetSHA256(), h.BaseSHA256(), t.SHA256, t.Delta.BaseSHA256)
	}
	return nil
}

// ArtifactInfo is what a manifest records about an artifact besides its
// name, size and digest.
type ArtifactInfo struct {
	// Rows is the row count of a .lut table, the search tree node count
	// of an .mmdb table.
	Rows int64
	// FormatVersion is the file format's major.minor version.
	FormatVersion string
	// BuildTime is the build time the file records (zero for a .lut
	// table built without one).
	BuildTime time.Time
}

// InspectArtifact opens a table file of the given kind, runs the full
// check of its format (every checksum and record) and returns what a
// manifest records about it.
func InspectArtifact(path string, kind Kind) (ArtifactInfo, error) {
	switch kind {
	case KindLUT:
		t, err := reader.OpenWith(path, reader.Options{Verify: true})
		if err != nil {
			return ArtifactInfo{}, err
		}
		defer t.Close()
		h := t.Header()
		return ArtifactInfo{Rows: int64(t.Rows()), FormatVersion: fmt.Sprintf("%d.%d", h.Major, h.Minor), BuildTime: t.BuildTime()}, nil
	case KindMMDB:
		m, err := mmdb.Open(path, mmdb.WithVerify())
		if err != nil {
			return ArtifactInfo{}, err
		}
		defer m.Close()
		md := m.Metadata()
		return ArtifactInfo{
			Rows:          int64(md.NodeCount),
			FormatVersion: fmt.Sprintf("%d.%d", md.BinaryFormatMajorVersion, md.BinaryFormatMinorVersion),
			BuildTime:     time.Unix(int64(md.BuildEpoch), 0).UTC(),
		}, nil
	}
	return ArtifactInfo{}, fmt.Errorf("%s: unknown kind %q", path, kind)
}
