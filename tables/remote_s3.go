package tables

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Store reads a manifest and its artifacts from an S3 bucket (or an
// S3-compatible store): s3://BUCKET/PREFIX/ holds PREFIX/MANIFEST.json and
// the artifacts next to it.
type s3Store struct {
	client *minio.Client
	bucket string
	prefix string // "" or ending in "/"
	key    string // the manifest's key
	o      *RemoteOptions
}

// S3Location splits s3://BUCKET/PREFIX/ (or s3://BUCKET/PREFIX/NAME.json)
// into the bucket, the prefix of the artifacts ("" or ending in "/") and
// the manifest's key.
func S3Location(u *url.URL) (bucket, prefix, key string, err error) {
	if u.Host == "" {
		return "", "", "", fmt.Errorf("s3 path %q: no bucket", u.Redacted())
	}
	p := strings.TrimPrefix(u.Path, "/")
	if p == "" || strings.HasSuffix(p, "/") {
		return u.Host, p, p + ManifestName, nil
	}
	if strings.HasSuffix(p, ".json") {
		i := strings.LastIndex(p, "/")
		return u.Host, p[:i+1], p, nil
	}
	return u.Host, p + "/", p + "/" + ManifestName, nil
}

// NewS3Client makes a client for the S3 store at endpoint ("" for AWS;
// host:port, or http://host:port for a store without TLS). Credentials
// come from the AWS environment (AWS_ACCESS_KEY_ID, ...), the shared
// credentials file (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE), then the
// instance's IAM role. region "" reads AWS_REGION.
func NewS3Client(endpoint, region string, pathStyle bool, transport http.RoundTripper) (*minio.Client, error) {
	secure := true
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	}
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, fmt.Errorf("s3 endpoint %q: %w", endpoint, err)
		}
		switch u.Scheme {
		case "http":
			secure = false
		case "https":
		default:
			return nil, fmt.Errorf("s3 endpoint %q: scheme must be http or https", endpoint)
		}
		endpoint = u.Host
	}
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" && endpoint != "s3.amazonaws.com" {
		region = "us-east-1" // S3-compatible stores: no region lookup
	}
	lookup := minio.BucketLookupAuto
	if pathStyle {
		lookup = minio.BucketLookupPath
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{Client: &http.Client{Transport: http.DefaultTransport}},
	})
	return minio.New(endpoint, &minio.Options{
		Creds: creds, Secure: secure, Region: region, BucketLookup: lookup,
		Transport: transport,
		// Retries are ours (with backoff and jitter, none after a 401
		// or 403).
		MaxRetries: 1,
	})
}

func newS3Store(u *url.URL, o *RemoteOptions, tlsConf *tls.Config) (*s3Store, error) {
	bucket, prefix, key, err := S3Location(u)
	if err != nil {
		return nil, err
	}
	c, err := NewS3Client(o.S3Endpoint, o.S3Region, o.S3PathStyle, o.transport(tlsConf))
	if err != nil {
		return nil, err
	}
	return &s3Store{client: c, bucket: bucket, prefix: prefix, key: key, o: o}, nil
}

func (s *s3Store) location() string { return "s3://" + s.bucket + "/" + s.key }

// s3Error classifies an error of the S3 client.
func s3Error(err error, what string) error {
	resp := minio.ToErrorResponse(err)
	if resp.StatusCode == 0 {
		return err // transport: unreachable or timeout
	}
	if resp.StatusCode == http.StatusNotModified {
		return errNotModified
	}
	fe := statusError(resp.StatusCode, what)
	if resp.Code != "" {
		fe.err = fmt.Errorf("%w (%s)", fe.err, resp.Code)
	}
	return fe
}

func (s *s3Store) manifest(ctx context.Context, cond validator, limit int64) ([]byte, validator, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.timeout())
	defer cancel()
	var opts minio.GetObjectOptions
	if cond.ETag != "" {
		if err := opts.SetMatchETagExcept(strings.Trim(cond.ETag, `"`)); err != nil {
			return nil, validator{}, err
		}
	}
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, s.key, opts)
	if err != nil {
		e := s3Error(err, "the manifest")
		if errors.Is(e, errNotModified) {
			return nil, cond, e
		}
		return nil, validator{}, e
	}
	defer body.Close()
	if info.Size > limit {
		return nil, validator{}, ferr(ReasonSizeLimit, true, "the manifest is %d bytes, over the limit of %d", info.Size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, validator{}, err
	}
	if int64(len(b)) > limit {
		return nil, validator{}, ferr(ReasonSizeLimit, true, "the manifest is over the limit of %d bytes", limit)
	}
	if info.Size >= 0 && int64(len(b)) != info.Size {
		return nil, validator{}, ferr(ReasonTruncated, false, "the manifest ended after %d of %d bytes", len(b), info.Size)
	}
	return b, validator{ETag: info.ETag}, nil
}

func (s *s3Store) artifact(ctx context.Context, name string, offset int64) (io.ReadCloser, int64, bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	var opts minio.GetObjectOptions
	if offset > 0 {
		if err := opts.SetRange(offset, 0); err != nil {
			cancel(nil)
			return nil, 0, false, err
		}
	}
	body, info, hdr, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, s.prefix+name, opts)
	if err != nil {
		cancel(nil)
		if minio.ToErrorResponse(err).StatusCode == http.StatusRequestedRangeNotSatisfiable {
			return nil, 0, false, ferr(ReasonSize, false, "the store's copy is shorter than %d bytes", offset)
		}
		return nil, 0, false, s3Error(err, "the download")
	}
	total, resumed := info.Size, false
	if cr := hdr.Get("Content-Range"); cr != "" {
		t, ok := contentRangeTotal(cr, offset)
		if !ok {
			body.Close()
			cancel(nil)
			return nil, 0, false, ferr(ReasonHTTPStatus, false, "bad Content-Range %q", cr)
		}
		total, resumed = t, true
	}
	return watchStall(ctx, body, s.o.timeout(), cancel), total, resumed, nil
}
