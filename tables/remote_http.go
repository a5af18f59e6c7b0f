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
	"strconv"
	"strings"
)

// httpStore reads a manifest and its artifacts from an HTTP(S) server:
// the artifacts are next to the manifest.
type httpStore struct {
	manifestURL *url.URL
	client      *http.Client
	o           *RemoteOptions
}

func newHTTPStore(u *url.URL, o *RemoteOptions, tlsConf *tls.Config) (*httpStore, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("tables path %q: no host", u.Redacted())
	}
	m := *u
	if m.Path == "" || strings.HasSuffix(m.Path, "/") {
		m.Path += ManifestName
	}
	return &httpStore{manifestURL: &m, o: o, client: &http.Client{Transport: o.transport(tlsConf), CheckRedirect: sameOrigin}}, nil
}

// sameOrigin follows a redirect only to the scheme and host of the first
// request: the token and the extra headers are the store's, and go
// neither to another host nor over plain HTTP.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return ferr(ReasonHTTPStatus, true, "redirect to %s://%s refused: the store's credentials go only to %s://%s",
			req.URL.Scheme, req.URL.Host, first.Scheme, first.Host)
	}
	return nil
}

// location is the manifest's URL without its credentials: the same
// source whatever the password.
func (h *httpStore) location() string {
	u := *h.manifestURL
	u.User = nil
	return u.String()
}

// request builds a GET with the authentication and the extra headers.
func (h *httpStore) request(ctx context.Context, u *url.URL) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, kv := range h.o.Headers {
		req.Header.Set(kv[0], kv[1])
	}
	tok := h.o.Token
	if h.o.TokenFile != "" {
		// Read on every request: a rotated token applies at once.
		b, err := os.ReadFile(h.o.TokenFile)
		if err != nil {
			return nil, ferr(ReasonUnauthorized, true, "reading the token file: %v", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

func (h *httpStore) manifest(ctx context.Context, cond validator, limit int64) ([]byte, validator, error) {
	ctx, cancel := context.WithTimeout(ctx, h.o.timeout())
	defer cancel()
	req, err := h.request(ctx, h.manifestURL)
	if err != nil {
		return nil, validator{}, err
	}
	if cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, validator{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		return nil, cond, errNotModified
	default:
		return nil, validator{}, statusError(resp.StatusCode, "the manifest")
	}
	if resp.ContentLength > limit {
		return nil, validator{}, ferr(ReasonSizeLimit, true, "the manifest is %d bytes, over the limit of %d", resp.ContentLength, limit)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, validator{}, err
	}
	if int64(len(b)) > limit {
		return nil, validator{}, ferr(ReasonSizeLimit, true, "the manifest is over the limit of %d bytes", limit)
	}
	if resp.ContentLength >= 0 && int64(len(b)) != resp.ContentLength {
		return nil, validator{}, ferr(ReasonTruncated, false, "the manifest ended after %d of %d bytes", len(b), resp.ContentLength)
	}
	return b, validator{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}, nil
}

func (h *httpStore) artifact(ctx context.Context, name string, offset int64) (io.ReadCloser, int64, bool, error) {
	// One path segment, escaped once.
	u := h.manifestURL.ResolveReference(&url.URL{Path: name, RawPath: url.PathEscape(name)})
	ctx, cancel := context.WithCancelCause(ctx)
	req, err := h.request(ctx, u)
	if err != nil {
		cancel(nil)
		return nil, 0, false, err
	}
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		cancel(nil)
		return nil, 0, false, err
	}
	fail := func(e error) (io.ReadCloser, int64, bool, error) {
		resp.Body.Close()
		cancel(nil)
		return nil, 0, false, e
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return watchStall(ctx, resp.Body, h.o.timeout(), cancel), resp.ContentLength, false, nil
	case http.StatusPartialContent:
		total, ok := contentRangeTotal(resp.Header.Get("Content-Range"), offset)
		if !ok {
			return fail(ferr(ReasonHTTPStatus, false, "bad Content-Range %q", resp.Header.Get("Content-Range")))
		}
		return watchStall(ctx, resp.Body, h.o.timeout(), cancel), total, true, nil
	case http.StatusRequestedRangeNotSatisfiable:
		// The object is shorter than what we hold: start over.
		return fail(ferr(ReasonSize, false, "the store's copy is shorter than %d bytes", offset))
	}
	return fail(statusError(resp.StatusCode, "the download"))
}

// contentRangeTotal reads "bytes START-END/TOTAL" and checks START.
func contentRangeTotal(cr string, offset int64) (int64, bool) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, false
	}
	start, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, false
	}
	if s, err := strconv.ParseUint(start, 10, 63); err != nil || int64(s) != offset {
		return 0, false
	}
	if tot == "*" {
		return -1, true
	}
	t, err := strconv.ParseUint(tot, 10, 63)
	if err != nil || int64(t) <= offset {
		return 0, false
	}
	return int64(t), true
}
