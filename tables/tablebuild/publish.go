package tablebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
)

// PublishOptions configure Publish.
type PublishOptions struct {
	// S3Endpoint, S3PathStyle and S3Region address an S3-compatible
	// store (see tables.RemoteOptions); credentials come from the AWS
	// environment, the shared credentials file or the instance role.
	S3Endpoint  string
	S3PathStyle bool
	S3Region    string
	// Log receives one line per artifact (nil: none).
	Log func(format string, args ...any)
	// Progress, when not nil, is called before the first artifact and
	// after each one with the artifacts and their bytes done so far (an
	// artifact already there counts as done) and in all.
	Progress func(done, total int, doneBytes, totalBytes int64)
}

// PublishResult says what Publish did.
type PublishResult struct {
	Uploaded []string // artifacts written
	Skipped  []string // artifacts already there
	Manifest string   // where the manifest went
}

// ErrManifestChanged is returned when the destination's manifest changed
// while Publish ran (another publisher): nothing was replaced.
var ErrManifestChanged = errors.New("the destination's manifest changed during the publish (another publisher?); run it again")

// Publish uploads the built directory dir to dest (file:///PATH/, a
// local path, or s3://BUCKET/PREFIX/) in the order nodes can follow
// safely: the directory is fully verified first; then every artifact and
// delta the destination lacks is written (they are content-addressed, so
// one already there is skipped); then the manifest, last, atomically: a
// rename for a directory, and on S3 a conditional write that fails if
// another publisher replaced the manifest meanwhile.
//
// Publishing an older manifest again (kept from an earlier build) rolls
// the nodes back, once its artifacts are at the destination.
func Publish(ctx context.Context, dir, dest string, opts PublishOptions) (*PublishResult, error) {
	if _, err := tables.VerifyDir(dir); err != nil {
		return nil, fmt.Errorf("%s does not verify, nothing published: %w", dir, err)
	}
	mp := filepath.Join(dir, tables.ManifestName)
	raw, err := fsutil.ReadRegular(mp)
	if err != nil {
		return nil, err
	}
	m, err := tables.ParseManifest(mp, raw)
	if err != nil {
		return nil, err
	}
	var t target
	switch {
	case strings.HasPrefix(dest, "s3://"):
		t, err = newS3Target(dest, opts)
	case strings.HasPrefix(dest, "file://"):
		u, perr := url.Parse(dest)
		if perr != nil {
			return nil, fmt.Errorf("destination %q: %w", dest, perr)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("destination %q: a file:// URL names a local path (file:///PATH)", dest)
		}
		t, err = newDirTarget(u.Path)
	case strings.Contains(dest, "://"):
		return nil, fmt.Errorf("destination %q: publish writes to file:// or s3:// (serve that directory or bucket over HTTP for https:// nodes)", dest)
	default:
		t, err = newDirTarget(dest)
	}
	if err != nil {
		return nil, err
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &PublishResult{Manifest: t.manifestName()}
	// Read the manifest's version before the artifacts go up: the final
	// write is conditional on it being unchanged.
	prev, err := t.manifestVersion(ctx)
	if err != nil {
		return nil, err
	}
	type file struct {
		name, sha256 string
		size         int64
	}
	var files []file
	for _, a := range m.Tables {
		files = append(files, file{a.File, a.SHA256, a.Size})
		if a.Delta != nil {
			files = append(files, file{a.Delta.File, a.Delta.SHA256, a.Delta.Size})
		}
	}
	var totalBytes, doneBytes int64
	for _, a := range files {
		totalBytes += a.size
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(int, int, int64, int64) {}
	}
	progress(0, len(files), 0, totalBytes)
	for i, a := range files {
		ok, err := t.has(ctx, a.name, a.size, a.sha256)
		if err != nil {
			return res, err
		}
		if ok {
			res.Skipped = append(res.Skipped, a.name)
			logf("%s: already there", a.name)
			doneBytes += a.size
			progress(i+1, len(files), doneBytes, totalBytes)
			continue
		}
		if err := t.put(ctx, a.name, filepath.Join(dir, a.name), a.size); err != nil {
			return res, fmt.Errorf("uploading %s: %w", a.name, err)
		}
		res.Uploaded = append(res.Uploaded, a.name)
		logf("%s: uploaded (%d bytes)", a.name, a.size)
		doneBytes += a.size
		progress(i+1, len(files), doneBytes, totalBytes)
	}
	if err := t.putManifest(ctx, raw, prev); err != nil {
		return res, err
	}
	// The caller reports the manifest published (Result.Manifest): Log
	// has the artifacts only.
	return res, nil
}

// target is a destination of Publish.
type target interface {
	// has reports whether the artifact is there, with that size (and,
	// where it is cheap to read, that digest).
	has(ctx context.Context, name string, size int64, sha256hex string) (bool, error)
	put(ctx context.Context, name, path string, size int64) error
	// manifestVersion identifies the current manifest ("" if none).
	manifestVersion(ctx context.Context) (string, error)
	// putManifest replaces the manifest if it is still at version prev.
	putManifest(ctx context.Context, b []byte, prev string) error
	manifestName() string
}

// dirTarget publishes into a local directory (served by a web server, or
// a mount shared with the nodes).
type dirTarget struct{ dir string }

func newDirTarget(dir string) (*dirTarget, error) {
	if dir == "" {
		return nil, errors.New("destination: empty path")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &dirTarget{dir: dir}, nil
}

func (d *dirTarget) manifestName() string { return filepath.Join(d.dir, tables.ManifestName) }

func (d *dirTarget) has(_ context.Context, name string, size int64, sha256hex string) (bool, error) {
	p := filepath.Join(d.dir, name)
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return false, nil
	}
	// A local copy is cheap to check whole: a damaged one is replaced.
	sum, _, err := fsutil.FileSHA256(p)
	if err != nil {
		return false, err
	}
	return sum == sha256hex, nil
}

func (d *dirTarget) put(_ context.Context, name, path string, _ int64) error {
	src, _, err := fsutil.OpenRegular(path)
	if err != nil {
		return err
	}
	defer src.Close()
	return fsutil.WriteFile(filepath.Join(d.dir, name), func(f *os.File) error {
		_, err := io.Copy(f, src)
		return err
	})
}

func (d *dirTarget) manifestVersion(context.Context) (string, error) {
	b, err := fsutil.ReadRegular(d.manifestName())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return fsutil.BytesSHA256(b), nil
}

func (d *dirTarget) putManifest(ctx context.Context, b []byte, prev string) error {
	// A directory has no conditional rename: check as late as possible.
	now, err := d.manifestVersion(ctx)
	if err != nil {
		return err
	}
	if now != prev {
		return ErrManifestChanged
	}
	// Web servers derive ETag and Last-Modified from the modification
	// time in seconds (and the size): a manifest replaced within the
	// same second by one of the same size would look unchanged to the
	// nodes' conditional requests. The new one is dated after the old.
	mtime := time.Now()
	if fi, err := os.Stat(d.manifestName()); err == nil && !mtime.After(fi.ModTime().Truncate(time.Second).Add(time.Second)) {
		mtime = fi.ModTime().Truncate(time.Second).Add(time.Second)
	}
	return fsutil.WriteFile(d.manifestName(), func(f *os.File) error {
		if _, err := f.Write(b); err != nil {
			return err
		}
		return os.Chtimes(f.Name(), mtime, mtime)
	})
}

// s3Target publishes into a bucket.
type s3Target struct {
	c                 *minio.Client
	bucket, prefix, k string
}

func newS3Target(dest string, opts PublishOptions) (*s3Target, error) {
	u, err := url.Parse(dest)
	if err != nil {
		return nil, fmt.Errorf("destination %q: %w", dest, err)
	}
	bucket, prefix, key, err := tables.S3Location(u)
	if err != nil {
		return nil, err
	}
	c, err := tables.NewS3Client(opts.S3Endpoint, opts.S3Region, opts.S3PathStyle, nil)
	if err != nil {
		return nil, err
	}
	return &s3Target{c: c, bucket: bucket, prefix: prefix, k: key}, nil
}

func (s *s3Target) manifestName() string { return "s3://" + s.bucket + "/" + s.k }

func (s *s3Target) has(ctx context.Context, name string, size int64, _ string) (bool, error) {
	info, err := s.c.StatObject(ctx, s.bucket, s.prefix+name, minio.StatObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, err
	}
	return info.Size == size, nil
}

func (s *s3Target) put(ctx context.Context, name, path string, size int64) error {
	f, _, err := fsutil.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = s.c.PutObject(ctx, s.bucket, s.prefix+name, f, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (s *s3Target) manifestVersion(ctx context.Context) (string, error) {
	info, err := s.c.StatObject(ctx, s.bucket, s.k, minio.StatObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
			return "", nil
		}
		return "", err
	}
	return info.ETag, nil
}

func (s *s3Target) putManifest(ctx context.Context, b []byte, prev string) error {
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	if prev == "" {
		opts.SetMatchETagExcept("*") // If-None-Match: * (create only)
	} else {
		opts.SetMatchETag(prev) // If-Match: replace only what we saw
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.k, strings.NewReader(string(b)), int64(len(b)), opts)
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
			return ErrManifestChanged
		}
		return fmt.Errorf("writing %s: %w", s.manifestName(), err)
	}
	return nil
}
