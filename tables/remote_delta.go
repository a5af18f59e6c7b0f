package tables

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/format/delta"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// Reasons a delta was not used (RemoteStats.DeltaFallbacks): the full
// artifact was downloaded instead.
const (
	DeltaBaseMissing = "base_missing" // the cache lacks the delta's base
	DeltaDownload    = "download"     // the delta could not be downloaded, or is not the manifest's
	DeltaInvalid     = "invalid"      // the delta does not apply to the base
	DeltaMismatch    = "mismatch"     // the rebuilt file is not the manifest's artifact
)

// DeltaFallbackReasons lists every fallback reason, for metrics.
var DeltaFallbackReasons = []string{DeltaBaseMissing, DeltaDownload, DeltaInvalid, DeltaMismatch}

// fetchDelta tries to rebuild t's artifact into part from t's delta and
// the delta's base in the cache, then checks it as a download is checked
// (size, the manifest's SHA256, the format's full check). It reports
// whether part holds the verified artifact; otherwise the fallback is
// counted, part is removed if the delta was applied to it (left alone
// otherwise: it may hold a partial download to resume), and the caller
// downloads the full artifact.
func (r *remote) fetchDelta(ctx context.Context, t *ManifestTable, part string) bool {
	d := t.Delta
	fallback := func(reason string, err error) bool {
		r.mu.Lock()
		r.stats.DeltaFallbacks[reason]++
		r.mu.Unlock()
		args := []any{"table", t.Name, "delta", d.File, "reason", reason}
		if err != nil {
			args = append(args, "error", err.Error())
		}
		r.log.Info("tables: delta not used, downloading the full artifact", args...)
		return false
	}
	base := filepath.Join(r.o.CacheDir, d.BaseSHA256+KindLUT.Ext())
	fi, err := os.Stat(base)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != d.BaseSize {
		return fallback(DeltaBaseMissing, nil)
	}
	if d.Size > r.o.maxArtifact() {
		return fallback(DeltaDownload, errors.New("the delta is over the artifact size limit"))
	}
	dname := d.SHA256 + DeltaExt
	dpart := filepath.Join(r.o.CacheDir, cachePartial, dname)
	r.pending[dname] = true
	defer delete(r.pending, dname)
	defer os.Remove(dpart)
	dt := &ManifestTable{Name: t.Name, File: d.File, Size: d.Size}
	if err := r.retry(ctx, "delta "+d.File, func() error { return r.download(ctx, dt, dpart) }); err != nil {
		return fallback(DeltaDownload, err)
	}
	b, err := os.ReadFile(dpart)
	if err != nil {
		return fallback(DeltaDownload, err)
	}
	if sum := fsutil.BytesSHA256(b); sum != d.SHA256 {
		return fallback(DeltaDownload, errors.New("the delta's sha256 is "+sum+", the manifest says "+d.SHA256))
	}
	// From here on part is the rebuilt file (a partial download of the
	// full artifact it held is lost: the delta is the cheaper way).
	if err := r.applyDelta(base, fi.Size(), b, part); err != nil {
		os.Remove(part)
		return fallback(DeltaInvalid, err)
	}
	if err := r.verifyDownload(t, part); err != nil {
		os.Remove(part)
		return fallback(DeltaMismatch, err)
	}
	return true
}

// applyDelta writes the file that delta b rebuilds from base into part.
func (r *remote) applyDelta(base string, baseSize int64, b []byte, part string) error {
	bf, _, err := fsutil.OpenRegular(base)
	if err != nil {
		return err
	}
	defer bf.Close()
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = delta.Apply(out, bf, baseSize, b, r.o.maxArtifact())
	if err == nil {
		// Durable before the rename into the cache, as a download.
		err = out.Sync()
	}
	return errors.Join(err, out.Close())
}
