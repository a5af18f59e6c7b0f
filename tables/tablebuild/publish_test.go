package tablebuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/lutkit/lutkit/internal/s3test"
	"github.com/lutkit/lutkit/tables"
)

// buildExamples builds examples/tables.yaml into a new directory.
func buildExamples(t *testing.T) (string, *tables.Manifest) {
	t.Helper()
	cfg, err := LoadConfig(copyExamples(t))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	if _, err := Build(context.Background(), cfg, out, Options{Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := tables.ReadManifest(filepath.Join(out, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

// TestPublishDir: artifacts then the manifest into a directory; a second
// publish skips every artifact; a manifest changed by someone else in
// between is not overwritten.
func TestPublishDir(t *testing.T) {
	dist, m := buildExamples(t)
	dest := filepath.Join(t.TempDir(), "www", "tables")
	res, err := Publish(context.Background(), dist, "file://"+dest, PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploaded) != len(m.Tables) || len(res.Skipped) != 0 {
		t.Fatalf("first publish: %+v", res)
	}
	if _, err := tables.VerifyDir(dest); err != nil {
		t.Fatalf("the published directory does not verify: %v", err)
	}
	res, err = Publish(context.Background(), dist, dest, PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploaded) != 0 || len(res.Skipped) != len(m.Tables) {
		t.Fatalf("second publish: %+v", res)
	}
	// A directory that does not verify publishes nothing.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, tables.ManifestName), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), bad, dest, PublishOptions{}); err == nil {
		t.Fatal("a directory that does not verify was published")
	}
	if _, err := Publish(context.Background(), dist, "https://example.com/tables/", PublishOptions{}); err == nil {
		t.Fatal("publish to https:// accepted")
	}
}

// TestPublishS3: artifacts then the manifest into an S3-compatible store
// (gofakes3 on 127.0.0.1), skipping artifacts already there; the
// manifest's write is conditional.
func TestPublishS3(t *testing.T) {
	s3 := s3test.Start(t, "tables")
	dist, m := buildExamples(t)
	opts := PublishOptions{S3Endpoint: s3.Endpoint, S3PathStyle: true}
	ctx := context.Background()
	res, err := Publish(ctx, dist, "s3://tables/prod/", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploaded) != len(m.Tables) || res.Manifest != "s3://tables/prod/MANIFEST.json" {
		t.Fatalf("first publish: %+v", res)
	}
	c, err := tables.NewS3Client(s3.Endpoint, "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range m.Tables {
		info, err := c.StatObject(ctx, "tables", "prod/"+a.File, minio.StatObjectOptions{})
		if err != nil || info.Size != a.Size {
			t.Fatalf("%s: %v %+v", a.File, err, info)
		}
	}
	res, err = Publish(ctx, dist, "s3://tables/prod/", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploaded) != 0 || len(res.Skipped) != len(m.Tables) {
		t.Fatalf("second publish: %+v", res)
	}

	// The conditional write: a manifest replaced after the publisher
	// looked is not overwritten.
	tg, err := newS3Target("s3://tables/prod/", opts)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := tg.manifestVersion(ctx)
	if err != nil || prev == "" {
		t.Fatalf("manifest version %q: %v", prev, err)
	}
	if err := tg.putManifest(ctx, []byte(`{"version":1,"tables":[]}`), prev); err != nil {
		t.Fatal(err)
	}
	if err := tg.putManifest(ctx, []byte(`{"version":1,"tables":[]}`), prev); !errors.Is(err, ErrManifestChanged) {
		t.Fatalf("a stale conditional write: %v", err)
	}
	if err := tg.putManifest(ctx, []byte(`{}`), ""); !errors.Is(err, ErrManifestChanged) {
		t.Fatalf("a create-only write over an existing manifest: %v", err)
	}
}
