package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lutkit/lutkit/internal/s3test"
)

// s3Publish uploads a version's artifacts, then its manifest, to
// s3://tables/prod/.
func s3Publish(t *testing.T, c *minio.Client, dir string, m *Manifest) {
	t.Helper()
	ctx := context.Background()
	for _, tb := range m.Tables {
		b, err := os.ReadFile(filepath.Join(dir, tb.File))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObject(ctx, "tables", "prod/"+tb.File, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, "tables", "prod/"+ManifestName, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRemoteS3: a set on s3://BUCKET/PREFIX/ of an S3-compatible store
// (gofakes3 on 127.0.0.1) follows versions, downloads each artifact once,
// polls with If-None-Match, and serves its cache while the store is down.
func TestRemoteS3(t *testing.T) {
	s3 := s3test.Start(t, "tables")
	c, err := NewS3Client(s3.Endpoint, "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	m1 := writeVersion(t, src, 1)
	s3Publish(t, c, src, m1)
	cache := t.TempDir()
	opts := remoteOpts(cache)
	opts.Remote.S3Endpoint, opts.Remote.S3PathStyle = s3.Endpoint, true
	set, err := Open("s3://tables/prod/", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d", v)
	}
	for range 3 {
		if err := set.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	r := set.Stats().Remote
	if r.NotModified != 3 || r.Downloads != 2 || r.Source != "s3://tables/prod/MANIFEST.json" {
		t.Fatalf("after three unchanged checks: %+v", r)
	}
	m2 := writeVersion(t, src, 2)
	s3Publish(t, c, src, m2)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := setVersion(t, set); v != 2 {
		t.Fatalf("version %d", v)
	}
	for _, m := range []*Manifest{m1, m2} {
		for _, tb := range m.Tables {
			if n := s3.GETs("/tables/prod/" + tb.File); n != 1 {
				t.Errorf("%s fetched %d times", tb.File, n)
			}
		}
	}
	st := set.Stats()
	if st.Version != st.Remote.Version || st.Version == "" || st.VersionSource != "s3://tables/prod/MANIFEST.json" {
		t.Fatalf("version %q from %q; remote %q", st.Version, st.VersionSource, st.Remote.Version)
	}

	// A manifest naming an artifact the bucket lacks: rejected whole.
	m3 := writeVersion(t, src, 3)
	b, _ := json.Marshal(m3)
	if _, err := c.PutObject(context.Background(), "tables", "prod/"+m3.Tables[0].File, bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(context.Background(), "tables", "prod/"+ManifestName, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	err = set.Reload()
	if reason, _ := reasonOf(err); reason != ReasonSize {
		t.Fatalf("an artifact of the wrong size: %v", err)
	}
	if _, err := c.PutObject(context.Background(), "tables", "prod/"+m3.Tables[0].File, bytes.NewReader(mustRead(t, filepath.Join(src, m3.Tables[0].File))), m3.Tables[0].Size, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// The check after a rejection skips the same manifest (it downloads
	// nothing and says why); the one after it tries the version again.
	err = set.Reload()
	if reason, _ := reasonOf(err); reason != ReasonSize {
		t.Fatalf("the check after a rejection: %v", err)
	}
	err = set.Reload()
	if reason, _ := reasonOf(err); reason != ReasonNotFound {
		t.Fatalf("a missing artifact: %v", err)
	}
	if v := setVersion(t, set); v != 2 {
		t.Fatalf("version %d after rejected versions", v)
	}
	s3Publish(t, c, src, m2)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}

	// The store down: the check fails (503, retried), the set stays.
	s3.Down.Store(true)
	if err := set.Reload(); err == nil {
		t.Fatal("a check against a store that is down succeeded")
	}
	if v := setVersion(t, set); v != 2 || !set.Stats().Remote.Stale {
		t.Fatalf("version %d, stats %+v", v, set.Stats().Remote)
	}
	// A restart with the store down serves the cache.
	set2, err := Open("s3://tables/prod/", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer set2.Close()
	if v := setVersion(t, set2); v != 2 {
		t.Fatalf("restart from the cache: version %d", v)
	}
	if r := set2.Stats().Remote; !r.Stale || time.Since(r.LastSuccess) > time.Minute {
		t.Fatalf("restart from the cache: %+v", r)
	}
	s3.Down.Store(false)
	if err := set2.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := set2.Stats().Remote; r.Stale || r.NotModified != 1 || r.Downloads != 0 {
		t.Fatalf("the store back: %+v", r)
	}
}
