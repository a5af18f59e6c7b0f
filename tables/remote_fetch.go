package tables

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// fetchArtifact makes sure the cache holds t's artifact, verified: a name
// lookup when it does; otherwise a download into .partial/ (resumed from
// what an earlier try left there), then the size, the SHA256 and the
// format's full check, then a rename into the cache.
func (r *remote) fetchArtifact(ctx context.Context, t *ManifestTable) error {
	name := cacheFile(t)
	final := filepath.Join(r.o.CacheDir, name)
	if fi, err := os.Stat(final); err == nil && fi.Mode().IsRegular() && fi.Size() == t.Size {
		return nil
	}
	part := filepath.Join(r.o.CacheDir, cachePartial, name)
	r.pending[name] = true
	defer delete(r.pending, name)
	fromDelta := t.Delta != nil && r.fetchDelta(ctx, t, part)
	if !fromDelta {
		err := r.retry(ctx, "artifact "+t.File, func() error { return r.download(ctx, t, part) })
		if err != nil {
			return err
		}
		if err := r.verifyDownload(t, part); err != nil {
			os.Remove(part)
			reason, _ := reasonOf(err)
			r.fail(reason)
			return err
		}
	}
	if err := os.Rename(part, final); err != nil {
		r.fail(ReasonCache)
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	if err := fsutil.SyncDir(r.o.CacheDir); err != nil {
		r.fail(ReasonCache)
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	r.mu.Lock()
	r.stats.Downloads++
	r.stats.DownloadsByFile[t.File]++
	if fromDelta {
		r.stats.DeltasApplied++
	}
	r.mu.Unlock()
	return nil
}

// download fetches the rest of t's artifact into part: from the byte
// after what part holds when the store honours a range, from the start
// otherwise.
func (r *remote) download(ctx context.Context, t *ManifestTable, part string) error {
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	offset := fi.Size()
	if offset > t.Size {
		offset = 0
	}
	if offset == t.Size && offset > 0 {
		return syncPart(f) // complete: the checks decide
	}
	body, total, resumed, err := r.st.artifact(ctx, t.File, offset)
	if err != nil {
		var fe *fetchError
		if errors.As(err, &fe) && fe.reason == ReasonSize {
			// The store's copy is shorter than what we hold: start over
			// on the next try, then the size check rejects it.
			_ = f.Truncate(0)
		}
		return err
	}
	defer body.Close()
	if !resumed {
		offset = 0
	}
	if total >= 0 && total != t.Size {
		return ferr(ReasonSize, true, "the store's copy is %d bytes, the manifest says %d", total, t.Size)
	}
	if err := f.Truncate(offset); err != nil {
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	// One byte more than expected shows a store sending too much.
	n, err := io.Copy(f, io.LimitReader(body, t.Size-offset+1))
	r.addBytes(n)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			// A write failed (a full disk): what was written would
			// keep the disk full until a later version installs, and
			// the next check starts over.
			os.Remove(part)
			return ferr(ReasonCache, true, "tables cache: %v", err)
		}
		return fmt.Errorf("after %d of %d bytes: %w", offset+n, t.Size, err)
	}
	if got := offset + n; got != t.Size {
		if got > t.Size {
			_ = f.Truncate(0)
			return ferr(ReasonSize, true, "the store sent more than the manifest's %d bytes", t.Size)
		}
		return ferr(ReasonTruncated, false, "the transfer ended after %d of %d bytes", got, t.Size)
	}
	return syncPart(f)
}

// syncPart makes a complete download durable before it is renamed into
// the cache: the manifest naming it is written (and synced) after, so a
// power loss must not leave the cache with the name and without the
// bytes.
func syncPart(f *os.File) error {
	if err := f.Sync(); err != nil {
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	return nil
}

// verifyDownload checks a complete download against the manifest: size,
// SHA256, then the format's full check (every checksum and record) and
// the row count.
func (r *remote) verifyDownload(t *ManifestTable, part string) error {
	sum, size, err := fsutil.FileSHA256(part)
	if err != nil {
		return ferr(ReasonCache, true, "tables cache: %v", err)
	}
	if size != t.Size {
		return ferr(ReasonSize, true, "%d bytes, the manifest says %d", size, t.Size)
	}
	if sum != t.SHA256 {
		return ferr(ReasonDigest, true, "digest mismatch: the download's sha256 is %s, the manifest says %s", sum, t.SHA256)
	}
	info, err := InspectArtifact(part, t.Kind)
	if err != nil {
		return ferr(ReasonStructure, true, "%v", trimPath(err, part))
	}
	if info.Rows != t.Rows {
		return ferr(ReasonStructure, true, "%d rows, the manifest says %d", info.Rows, t.Rows)
	}
	return nil
}
