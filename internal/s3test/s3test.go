// Package s3test runs an S3-compatible server (gofakes3, in memory) on
// 127.0.0.1 for tests, with a bucket and AWS credentials in the
// environment. Only tests import it.
package s3test

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is a running S3-compatible store.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	Backend  *s3mem.Backend

	srv *http.Server
	ln  net.Listener
	// Requests counts requests; GETs counts GET requests by path
	// (/BUCKET/KEY) that the store answered 200 or 206.
	Requests atomic.Int64
	gets     map[string]*atomic.Int64
	getsMu   chan struct{}
	// Down, while true, answers every request 503.
	Down atomic.Bool
}

// Start starts a store holding an empty bucket, sets AWS credentials
// and region in the test's environment, and stops the store when the
// test ends.
func Start(t *testing.T, bucket string) *Server {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(be, gofakes3.WithTimeSkewLimit(0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Endpoint: "http://" + ln.Addr().String(), Backend: be, ln: ln,
		gets: map[string]*atomic.Int64{}, getsMu: make(chan struct{}, 1)}
	h := faker.Server()
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		if s.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if r.Method == http.MethodGet && (sw.status == http.StatusOK || sw.status == http.StatusPartialContent) {
			s.counter(r.URL.Path).Add(1)
		}
	})}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { s.srv.Close() })
	t.Setenv("AWS_ACCESS_KEY_ID", "lutkit-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "lutkit-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	return s
}

func (s *Server) counter(path string) *atomic.Int64 {
	s.getsMu <- struct{}{}
	defer func() { <-s.getsMu }()
	c := s.gets[path]
	if c == nil {
		c = new(atomic.Int64)
		s.gets[path] = c
	}
	return c
}

// GETs returns how many GETs of /BUCKET/KEY the store answered with data.
func (s *Server) GETs(path string) int64 { return s.counter(path).Load() }

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
