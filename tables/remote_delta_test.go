package tables

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/format/delta"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// withDelta names in m, for table a, a delta file holding b (the delta
// made from prev's a to m's a when b is nil), written into dir.
func withDelta(t *testing.T, dir string, prev, m *Manifest, b []byte, write bool) *ManifestDelta {
	t.Helper()
	base, target := prev.Table("a"), m.Table("a")
	if b == nil {
		bb, err := os.ReadFile(filepath.Join(dir, base.File))
		must(t, err)
		tb, err := os.ReadFile(filepath.Join(dir, target.File))
		must(t, err)
		var d bytes.Buffer
		_, err = delta.Encode(&d, bb, tb)
		must(t, err)
		b = d.Bytes()
	}
	sum := fsutil.BytesSHA256(b)
	target.Delta = &ManifestDelta{File: DeltaName("a", sum), SHA256: sum, Size: int64(len(b)), BaseSHA256: base.SHA256, BaseSize: base.Size, Chain: 1}
	if write {
		writeFile(t, filepath.Join(dir, target.Delta.File), b)
	}
	return target.Delta
}

// TestRemoteDeltaFallbacks: a set holding the base rebuilds an artifact
// from its delta and downloads nothing else for it; a delta missing from
// the store, or one that is not a delta, makes it download the full
// artifact, counted by reason; every version is served whole.
func TestRemoteDeltaFallbacks(t *testing.T) {
	s := newStoreServer(t)
	v1 := s.publish(1)
	set, err := Open(s.url(), remoteOpts(t.TempDir()))
	must(t, err)
	defer set.Close()

	steps := []struct {
		what     string
		bytes    []byte // nil: a real delta
		write    bool
		applied  uint64
		fallback string
	}{
		{what: "delta missing from the store (404)", write: false, fallback: DeltaDownload},
		{what: "not a delta", bytes: []byte("this is not a delta at all"), write: true, fallback: DeltaInvalid},
		{what: "a real delta", write: true, applied: 1},
	}
	prev := v1
	for i, st := range steps {
		version := i + 2
		m := writeVersion(t, s.dir, version)
		d := withDelta(t, s.dir, prev, m, st.bytes, st.write)
		s.putManifest(m)
		if err := set.Reload(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if v := setVersion(t, set); v != version {
			t.Fatalf("%s: serving version %d, want %d", st.what, v, version)
		}
		r := set.Stats().Remote
		full := s.count(m.Table("a").File)
		if r.DeltasApplied != st.applied {
			t.Errorf("%s: %d deltas applied, want %d", st.what, r.DeltasApplied, st.applied)
		}
		if st.fallback != "" && (r.DeltaFallbacks[st.fallback] != 1 || full != 1) {
			t.Errorf("%s: fallbacks %v, full artifact downloaded %d times", st.what, r.DeltaFallbacks, full)
		}
		if st.fallback == "" && (full != 0 || s.count(d.File) != 1) {
			t.Errorf("%s: full artifact downloaded %d times, the delta %d", st.what, full, s.count(d.File))
		}
		prev = m
	}
	// The artifact rebuilt from the delta is the full artifact.
	a := prev.Table("a")
	got, _, err := fsutil.FileSHA256(filepath.Join(remoteCacheDir(set), a.SHA256+".lut"))
	must(t, err)
	if got != a.SHA256 {
		t.Fatalf("the cached artifact's sha256 is %s, the manifest says %s", got, a.SHA256)
	}
}

func remoteCacheDir(s *Set) string { return s.remote.o.CacheDir }
