package tables

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// IsRemote reports whether path names a remote manifest (http://,
// https:// or s3://) rather than a local directory or file.
func IsRemote(path string) bool {
	for _, p := range []string{"http://", "https://", "s3://"} {
		if len(path) >= len(p) && strings.EqualFold(path[:len(p)], p) {
			return true
		}
	}
	return false
}

// Failure reasons of a remote check, as counted in RemoteStats.Failures.
const (
	ReasonUnreachable  = "unreachable"   // connection refused, reset, DNS
	ReasonTimeout      = "timeout"       // no answer, or a stalled transfer
	ReasonUnauthorized = "unauthorized"  // 401
	ReasonForbidden    = "forbidden"     // 403
	ReasonNotFound     = "not_found"     // 404 (the manifest or an artifact)
	ReasonHTTPStatus   = "http_status"   // any other unexpected status
	ReasonManifest     = "manifest"      // the manifest does not parse
	ReasonSizeLimit    = "size_limit"    // over RemoteOptions.MaxArtifactSize
	ReasonSize         = "size_mismatch" // the store's size is not the manifest's
	ReasonTruncated    = "truncated"     // the transfer ended early
	ReasonDigest       = "digest"        // the SHA256 is not the manifest's
	ReasonStructure    = "structure"     // the artifact fails its format's check
	ReasonCache        = "cache"         // the local cache could not be written
)

// FailureReasons lists every failure reason, for metrics.
var FailureReasons = []string{ReasonUnreachable, ReasonTimeout, ReasonUnauthorized, ReasonForbidden, ReasonNotFound,
	ReasonHTTPStatus, ReasonManifest, ReasonSizeLimit, ReasonSize, ReasonTruncated, ReasonDigest, ReasonStructure, ReasonCache}

// fetchError is a failed remote operation with its reason.
type fetchError struct {
	reason string
	// permanent errors are not retried within one check: retrying cannot
	// help (a 401 or a bad digest) or would hammer the store.
	permanent bool
	err       error
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

func ferr(reason string, permanent bool, format string, args ...any) *fetchError {
	return &fetchError{reason: reason, permanent: permanent, err: fmt.Errorf(format, args...)}
}

// reasonOf classifies err.
func reasonOf(err error) (string, bool) {
	var fe *fetchError
	if errors.As(err, &fe) {
		return fe.reason, fe.permanent
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errStalled) {
		return ReasonTimeout, false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// The connection closed before the Content-Length's bytes.
		return ReasonTruncated, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout, false
	}
	return ReasonUnreachable, false
}

// statusError classifies an unexpected HTTP status.
func statusError(status int, what string) *fetchError {
	switch status {
	case http.StatusUnauthorized:
		return ferr(ReasonUnauthorized, true, "%s: 401 unauthorized (check the token)", what)
	case http.StatusForbidden:
		return ferr(ReasonForbidden, true, "%s: 403 forbidden (check the token or the credentials)", what)
	case http.StatusNotFound:
		return ferr(ReasonNotFound, true, "%s: 404 not found", what)
	}
	// 5xx and 429 may pass; other statuses will not.
	transient := status >= 500 || status == http.StatusTooManyRequests
	return ferr(ReasonHTTPStatus, !transient, "%s: unexpected status %d %s", what, status, http.StatusText(status))
}

// validator identifies the version of the manifest a conditional request
// asks about.
type validator struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// errNotModified answers a conditional request whose validator matched.
var errNotModified = errors.New("not modified")

// store is where a remote set lives: an HTTP server or an S3 bucket.
type store interface {
	// manifest fetches the manifest; with a non-empty cond, conditionally
	// (errNotModified when unchanged). At most limit bytes are read.
	manifest(ctx context.Context, cond validator, limit int64) ([]byte, validator, error)
	// artifact opens the artifact name from byte offset. total is the
	// object's full size (-1 if unknown); resumed is false when the body
	// starts at byte 0 whatever offset asked for.
	artifact(ctx context.Context, name string, offset int64) (body io.ReadCloser, total int64, resumed bool, err error)
	// location names the store in logs and stats, without credentials.
	location() string
}

// newStore makes the store of a remote path.
func newStore(path string, o *RemoteOptions) (store, error) {
	u, err := url.Parse(path)
	if err != nil {
		// Not err: url.Parse's error quotes the whole URL, password
		// included.
		return nil, fmt.Errorf("tables path %s: not a valid URL", redactURL(path))
	}
	tlsConf, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return newHTTPStore(u, o, tlsConf)
	case "s3":
		return newS3Store(u, o, tlsConf)
	}
	return nil, fmt.Errorf("tables path %q: unknown scheme %q (http, https or s3)", redactURL(path), u.Scheme)
}

// redactURL hides a URL's password, for logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// tlsConfig builds the client TLS settings: the CA bundle and the client
// certificate. Nil when neither is set (the system roots apply).
func (o *RemoteOptions) tlsConfig() (*tls.Config, error) {
	if o.CAFile == "" && o.CertFile == "" && o.KeyFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tables CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tables CA bundle %s: no PEM certificate in it", o.CAFile)
		}
		c.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("tables client certificate: give both the certificate and the key file")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tables client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// transport is the HTTP transport of both stores.
func (o *RemoteOptions) transport(tlsConf *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsConf
	t.ResponseHeaderTimeout = o.timeout()
	t.TLSHandshakeTimeout = o.timeout()
	t.DialContext = (&net.Dialer{Timeout: o.timeout(), KeepAlive: 30 * time.Second}).DialContext
	return t
}

// errStalled ends a transfer that made no progress for the timeout.
var errStalled = errors.New("the transfer stalled")

// stallReader cancels a transfer when no byte arrives for timeout.
type stallReader struct {
	r      io.ReadCloser
	timer  *time.Timer
	d      time.Duration
	cancel context.CancelCauseFunc
	ctx    context.Context
}

// watchStall wraps body so that a read that waits longer than d fails
// (cancel must cancel the request's context).
func watchStall(ctx context.Context, body io.ReadCloser, d time.Duration, cancel context.CancelCauseFunc) io.ReadCloser {
	s := &stallReader{r: body, d: d, cancel: cancel, ctx: ctx}
	s.timer = time.AfterFunc(d, func() { cancel(errStalled) })
	return s
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.d)
	}
	if err != nil && !errors.Is(err, io.EOF) && errors.Is(context.Cause(s.ctx), errStalled) {
		err = fmt.Errorf("no data for %s: %w", s.d, errStalled)
	}
	return n, err
}

func (s *stallReader) Close() error {
	s.timer.Stop()
	s.cancel(context.Canceled)
	return s.r.Close()
}
