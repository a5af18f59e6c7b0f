package tablebuild

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/format/delta"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
)

// DefaultDeltaChain is how many consecutive versions of a table are
// published with a delta before one is published full only.
const DefaultDeltaChain = 8

func (o *Options) deltaChain() int {
	if o.DeltaChain > 0 {
		return o.DeltaChain
	}
	return DefaultDeltaChain
}

// writeDelta writes into dir the delta that rebuilds the new artifact of
// table name (at path, SHA256 sum) from its previous one, old, and
// returns its manifest entry. It writes none, and returns nil, when there
// is no previous artifact in dir to make it from, when the table's chain
// of deltas is at its limit, or when the delta would not be smaller than
// half the artifact.
func writeDelta(dir, name string, old *tables.ManifestTable, path, sum string, chain int) (*tables.ManifestDelta, error) {
	if old == nil || old.Kind != tables.KindLUT || old.SHA256 == sum {
		return nil, nil
	}
	n := 1
	if old.Delta != nil {
		n = old.Delta.Chain + 1
	}
	if n > chain {
		return nil, nil
	}
	base := soundBase(filepath.Join(dir, old.File), old)
	if base == nil {
		return nil, nil // a full version only
	}
	target, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := delta.Encode(&b, base, target); err != nil {
		return nil, err
	}
	if int64(b.Len()) >= int64(len(target))/2 {
		return nil, nil
	}
	// Check it as a node will, before anything names it.
	if err := checkDelta(dir, base, target, b.Bytes()); err != nil {
		return nil, err
	}
	dsum := fsutil.BytesSHA256(b.Bytes())
	d := &tables.ManifestDelta{File: tables.DeltaName(name, dsum), SHA256: dsum, Size: int64(b.Len()),
		BaseSHA256: old.SHA256, BaseSize: old.Size, Chain: n}
	err = fsutil.WriteFile(filepath.Join(dir, d.File), func(f *os.File) error {
		_, err := f.Write(b.Bytes())
		return err
	})
	return d, err
}

// sameVersion reports whether the artifact just built (SHA256 sum, size
// bytes) is the previous version old of its table.
func sameVersion(old *tables.ManifestTable, kind tables.Kind, sum string, size int64) bool {
	return old != nil && old.Kind == kind && old.SHA256 == sum && old.Size == size
}

// keptDelta returns d, the delta of a version kept, when dir still holds
// its file with the recorded size, and nil when not (removed by hand, or
// left out of a copy of dir): the version is then listed full only, as a
// manifest naming a missing delta fails lut verify and lut publish.
func keptDelta(dir string, d *tables.ManifestDelta) *tables.ManifestDelta {
	if d == nil {
		return nil
	}
	fi, err := os.Stat(filepath.Join(dir, d.File))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != d.Size {
		return nil
	}
	c := *d
	return &c
}

// soundBase returns the previous artifact's bytes, or nil when dir no
// longer holds it as the manifest describes it (pruned, or damaged).
func soundBase(path string, old *tables.ManifestTable) []byte {
	b, err := fsutil.ReadRegular(path)
	if err != nil || int64(len(b)) != old.Size || fsutil.BytesSHA256(b) != old.SHA256 {
		return nil
	}
	return b
}

// checkDelta applies d to base in a temporary file of dir and compares
// the result with target.
func checkDelta(dir string, base, target, d []byte) error {
	f, err := os.CreateTemp(dir, ".delta.tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := delta.Apply(f, bytes.NewReader(base), int64(len(base)), d, int64(len(target))); err != nil {
		return err
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	if !bytes.Equal(got, target) {
		return errDeltaMismatch
	}
	return nil
}

var errDeltaMismatch = errors.New("the delta does not rebuild the artifact (a bug in format/delta)")
