package tables

import (
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// storeServer serves a directory over HTTP on 127.0.0.1 (conditional
// requests and ranges by net/http's file server) with faults switched on
// per test.
type storeServer struct {
	t    *testing.T
	dir  string
	srv  *http.Server
	ln   net.Listener
	addr string

	mu sync.Mutex
	// token, when set, is the bearer token every request must carry.
	token string
	// stall makes artifact requests hang after the headers.
	stall bool
	// cutOnce cuts the first download of each artifact after half its
	// bytes (the store going down mid-download); cut cuts every one.
	// Both send the full Content-Length.
	cutOnce map[string]bool
	cut     bool
	// truncate serves artifacts short by this many bytes, without a
	// Content-Length (chunked): the body just ends early.
	truncate int64
	// advertise sends this Content-Length with artifacts (and no body).
	advertise int64
	// status answers requests for an artifact by name with that status
	// instead of the file.
	status map[string]int
	// slow sends artifacts (whole, from byte 0) 4 KiB at a time with
	// this pause between the pieces; slowStarted counts those begun.
	slow        time.Duration
	slowStarted atomic.Int64

	mtime int64

	requests  atomic.Int64
	notMod    atomic.Int64
	byPath    sync.Map // path -> *atomic.Int64 (full GETs with status 200 or 206)
	rangeReqs atomic.Int64
}

func newStoreServer(t *testing.T) *storeServer {
	t.Helper()
	s := &storeServer{t: t, dir: t.TempDir(), cutOnce: map[string]bool{}, status: map[string]int{}}
	s.start("127.0.0.1:0")
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *storeServer) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.ln, s.addr = ln, ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
}

func (s *storeServer) stop() { s.srv.Close() }

func (s *storeServer) url() string { return "http://" + s.addr + "/tables/" + ManifestName }

// setStatus makes the server answer path with status (0: serve it again).
func (s *storeServer) setStatus(path string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.status, path)
	} else {
		s.status[path] = status
	}
}

// openPublished publishes version 1 on s and opens a set on it, with a
// cache of its own, closed when the test ends.
func openPublished(t *testing.T, s *storeServer) *Set {
	t.Helper()
	s.publish(1)
	set, err := Open(s.url(), remoteOpts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

func (s *storeServer) count(path string) int64 {
	v, ok := s.byPath.Load(path)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// countingWriter counts an answer as its status is sent, before any of
// the body: a client that has read the answer finds it counted.
type countingWriter struct {
	http.ResponseWriter
	s      *storeServer
	name   string
	status int
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		switch code {
		case http.StatusNotModified:
			w.s.notMod.Add(1)
		case http.StatusOK, http.StatusPartialContent:
			v, _ := w.s.byPath.LoadOrStore(w.name, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (s *storeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	token, stall, truncate, advertise, slow := s.token, s.stall, s.truncate, s.advertise, s.slow
	name0 := strings.TrimPrefix(r.URL.Path, "/tables/")
	status := s.status[name0]
	s.mu.Unlock()
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	if token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if got != token {
			http.Error(w, "bad token", http.StatusForbidden)
			return
		}
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/tables/")
	if !ok || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	path := filepath.Join(s.dir, name)
	artifact := name != ManifestName
	if r.Header.Get("Range") != "" {
		s.rangeReqs.Add(1)
	}
	if artifact {
		switch {
		case stall:
			fi, err := os.Stat(path)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case advertise > 0:
			w.Header().Set("Content-Length", "10000000000")
			w.WriteHeader(http.StatusOK)
			return
		case slow > 0:
			b, err := os.ReadFile(path)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			v, _ := s.byPath.LoadOrStore(name, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			s.slowStarted.Add(1)
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.WriteHeader(http.StatusOK)
			for len(b) > 0 {
				n := min(len(b), 4096)
				if _, err := w.Write(b[:n]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				b = b[n:]
				time.Sleep(slow)
			}
			return
		case truncate > 0:
			b, err := os.ReadFile(path)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write(b[:int64(len(b))-truncate])
			return
		}
		s.mu.Lock()
		cut := s.cutOnce[name] || s.cut
		delete(s.cutOnce, name)
		s.mu.Unlock()
		if cut {
			b, _ := os.ReadFile(path)
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}
	http.ServeFile(&countingWriter{ResponseWriter: w, s: s, name: name}, r, path)
}

// publish writes a version of tables a and b into the server's directory,
// the manifest last, and returns the manifest.
func (s *storeServer) publish(version int) *Manifest {
	s.t.Helper()
	m := writeVersion(s.t, s.dir, version)
	s.putManifest(m)
	return m
}

// writeVersion writes the artifacts of tables a and b of a version into
// dir: b has one row more, so that the two artifacts differ.
func writeVersion(t *testing.T, dir string, version int) *Manifest {
	t.Helper()
	m := &Manifest{Version: ManifestVersion, Writer: "test", Generated: time.Now().UTC()}
	for i, name := range []string{"a", "b"} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		compileVersion(t, tmp, smallRows+i, version)
		sum, size, err := fsutil.FileSHA256(tmp)
		if err != nil {
			t.Fatal(err)
		}
		file := ArtifactName(name, KindLUT, sum)
		if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
		m.Tables = append(m.Tables, ManifestTable{Name: name, Kind: KindLUT, File: file, SHA256: sum, Size: size,
			Rows: int64(smallRows + i), FormatVersion: "1.0"})
	}
	return m
}

// putManifest publishes m. Last-Modified has a resolution of a second:
// each manifest gets a modification time of its own.
func (s *storeServer) putManifest(m *Manifest) {
	s.t.Helper()
	putManifest(s.t, s.dir, m)
	s.bumpManifest()
}

func (s *storeServer) bumpManifest() {
	s.t.Helper()
	s.mtime++
	mt := time.Unix(1700000000+s.mtime, 0)
	if err := os.Chtimes(filepath.Join(s.dir, ManifestName), mt, mt); err != nil {
		s.t.Fatal(err)
	}
}

// setVersion returns the version every key of both tables of the set's
// current snapshot holds, failing on a mix.
func setVersion(t *testing.T, set *Set) int {
	t.Helper()
	snap := set.Acquire()
	defer snap.Release()
	va, err := lookupVersion(snap, "a", 7)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := lookupVersion(snap, "b", 7)
	if err != nil {
		t.Fatal(err)
	}
	if va != vb {
		t.Fatalf("tables a and b of one snapshot hold versions %d and %d", va, vb)
	}
	return va
}

func remoteOpts(cache string) Options {
	return Options{NoWatch: true, Logger: slog.New(slog.DiscardHandler), Remote: RemoteOptions{
		CacheDir: cache, Timeout: 2 * time.Second, Retries: 2, RetryBackoff: 10 * time.Millisecond,
	}}
}

// TestRemoteFollowsVersions: a set on an HTTP manifest serves v1, switches
// to v2 as a whole, downloads each artifact once, and polls an unchanged
// manifest with conditional requests that transfer nothing.
func TestRemoteFollowsVersions(t *testing.T) {
	srv := newStoreServer(t)
	m1 := srv.publish(1)
	cache := t.TempDir()
	opts := remoteOpts(cache)
	opts.NoWatch = false
	opts.PollInterval = 50 * time.Millisecond
	set, err := Open(srv.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	// Unchanged: conditional requests only.
	before := set.Stats().Remote
	waitFor(t, 10*time.Second, "three not-modified answers", func() bool { return set.Stats().Remote.NotModified >= 3 })
	after := set.Stats().Remote
	if after.Bytes != before.Bytes || after.Downloads != before.Downloads {
		t.Fatalf("an unchanged manifest transferred %d bytes, %d downloads", after.Bytes-before.Bytes, after.Downloads-before.Downloads)
	}
	if srv.notMod.Load() < 3 {
		t.Fatalf("the server answered %d requests with 304", srv.notMod.Load())
	}

	m2 := srv.publish(2)
	waitFor(t, 10*time.Second, "version 2", func() bool { return setVersion(t, set) == 2 })
	st := set.Stats()
	r := st.Remote
	if r.Stale || r.Version == "" || r.Source != srv.url() {
		t.Fatalf("remote stats: %+v", r)
	}
	for _, m := range []*Manifest{m1, m2} {
		for _, tb := range m.Tables {
			if n := srv.count(tb.File); n != 1 {
				t.Errorf("artifact %s downloaded %d times", tb.File, n)
			}
			if n := r.DownloadsByFile[tb.File]; n != 1 {
				t.Errorf("artifact %s counted %d downloads", tb.File, n)
			}
		}
	}
	// The cache: content-addressed artifacts of both versions.
	for _, m := range []*Manifest{m1, m2} {
		for _, tb := range m.Tables {
			if _, err := os.Stat(filepath.Join(cache, tb.SHA256+".lut")); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestRemoteCacheKeepsVersions: the cache keeps the current version and
// Keep previous ones, and removes the artifacts of older versions.
func TestRemoteCacheKeepsVersions(t *testing.T) {
	srv := newStoreServer(t)
	var ms []*Manifest
	ms = append(ms, srv.publish(1))
	cache := t.TempDir()
	opts := remoteOpts(cache)
	opts.Remote.Keep = 1
	set, err := Open(srv.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for v := 2; v <= 4; v++ {
		ms = append(ms, srv.publish(v))
		if err := set.Reload(); err != nil {
			t.Fatal(err)
		}
		if got := setVersion(t, set); got != v {
			t.Fatalf("version %d, want %d", got, v)
		}
	}
	// Rolling back to a kept version downloads nothing.
	downloads := set.Stats().Remote.Downloads
	srv.putManifest(ms[2])
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := setVersion(t, set); got != 3 {
		t.Fatalf("rollback: version %d, want 3", got)
	}
	if d := set.Stats().Remote.Downloads; d != downloads {
		t.Fatalf("rollback to a cached version downloaded %d artifacts", d-downloads)
	}
	for i, m := range ms {
		kept := i >= 2 // versions 3 and 4
		for _, tb := range m.Tables {
			_, err := os.Stat(filepath.Join(cache, tb.SHA256+".lut"))
			if kept != (err == nil) {
				t.Errorf("version %d: artifact %s kept=%v, stat: %v", i+1, tb.File, kept, err)
			}
		}
	}
}

// TestRemoteStoreDownAtStart: with the store unreachable, a new set serves
// the cache's last verified version and reports it stale until a check
// succeeds; with an empty cache, Open fails.
func TestRemoteStoreDownAtStart(t *testing.T) {
	srv := newStoreServer(t)
	srv.publish(1)
	cache := t.TempDir()
	set, err := Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatal(err)
	}
	set.Close()
	addr := srv.addr
	srv.stop()

	set, err = Open(srv.url(), remoteOpts(cache))
	if err != nil {
		t.Fatalf("open with the store down and a cache: %v", err)
	}
	defer set.Close()
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	r := set.Stats().Remote
	if !r.Stale || r.LastSuccess.IsZero() || r.Failures[ReasonUnreachable] == 0 {
		t.Fatalf("remote stats with the store down: %+v", r)
	}
	if _, err := Open(srv.url(), remoteOpts(t.TempDir())); err == nil {
		t.Fatal("open with the store down and no cache succeeded")
	}
	// A cache filled from another source does not serve this one.
	if _, err := Open("http://"+addr+"/other/"+ManifestName, remoteOpts(cache)); err == nil {
		t.Fatal("a cache of another source served")
	}

	srv.start(addr)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := set.Stats().Remote; r.Stale || r.NotModified != 1 {
		t.Fatalf("after the store came back: %+v", r)
	}
}

// TestRemoteResumesDownload: a download cut half-way resumes with a range
// request and the version is served.
func TestRemoteResumesDownload(t *testing.T) {
	srv := newStoreServer(t)
	set := openPublished(t, srv)
	m2 := writeVersion(t, srv.dir, 2)
	srv.mu.Lock()
	for _, tb := range m2.Tables {
		srv.cutOnce[tb.File] = true
	}
	srv.mu.Unlock()
	srv.putManifest(m2)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := setVersion(t, set); v != 2 {
		t.Fatalf("version %d, want 2", v)
	}
	if n := srv.rangeReqs.Load(); n != 2 {
		t.Fatalf("%d range requests, want 2 (one resume per artifact)", n)
	}
	r := set.Stats().Remote
	if r.Downloads != 4 || r.Failures[ReasonTruncated] != 2 || r.Failures[ReasonUnreachable] != 0 {
		t.Fatalf("remote stats: %+v", r)
	}
}

// TestRemoteFaults: every bad version is rejected whole, counted by
// reason, and the set stays on the version it has.
func TestRemoteFaults(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		setup  func(srv *storeServer, m *Manifest) // m: v2, artifacts in place, manifest not yet published
		calls  int64                               // the most requests one check may make (0: any)
	}{
		{name: "truncated artifact", reason: ReasonTruncated, setup: func(srv *storeServer, m *Manifest) { srv.truncate = 100 }},
		{name: "artifact cut short of its Content-Length", reason: ReasonTruncated, setup: func(srv *storeServer, m *Manifest) { srv.cut = true }},
		{name: "wrong digest", reason: ReasonDigest, setup: func(srv *storeServer, m *Manifest) {
			// The artifact of table a has the right size and other bytes.
			p := filepath.Join(srv.dir, m.Tables[0].File)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0xff
			writeFile(srv.t, p, b)
		}},
		{name: "missing artifact", reason: ReasonNotFound, calls: 3, setup: func(srv *storeServer, m *Manifest) {
			os.Remove(filepath.Join(srv.dir, m.Tables[1].File))
		}},
		{name: "manifest not JSON", reason: ReasonManifest, calls: 1, setup: func(srv *storeServer, m *Manifest) {
			writeFile(srv.t, filepath.Join(srv.dir, ManifestName), []byte("<html>oops</html>\n"))
		}},
		{name: "stalled server", reason: ReasonTimeout, setup: func(srv *storeServer, m *Manifest) { srv.stall = true }},
		{name: "10 GB advertised by the store", reason: ReasonSize, calls: 2, setup: func(srv *storeServer, m *Manifest) { srv.advertise = 10e9 }},
		{name: "10 GB in the manifest", reason: ReasonSizeLimit, calls: 1, setup: func(srv *storeServer, m *Manifest) {
			m.Tables[0].Size = 10e9
		}},
		{name: "missing token", reason: ReasonUnauthorized, calls: 1, setup: func(srv *storeServer, m *Manifest) { srv.token = "sesame" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStoreServer(t)
			set := openPublished(t, srv)
			m2 := writeVersion(t, srv.dir, 2)
			srv.mu.Lock()
			tc.setup(srv, m2)
			srv.mu.Unlock()
			if tc.reason != ReasonManifest {
				srv.putManifest(m2)
			} else {
				srv.bumpManifest()
			}
			reqs := srv.requests.Load()
			err := set.Reload()
			if err == nil {
				t.Fatal("the bad version was accepted")
			}
			if reason, _ := reasonOf(err); reason != tc.reason {
				t.Fatalf("reason %q, want %q: %v", reason, tc.reason, err)
			}
			if n := srv.requests.Load() - reqs; tc.calls > 0 && n > tc.calls {
				t.Fatalf("one check made %d requests, at most %d expected (no retries)", n, tc.calls)
			}
			if v := setVersion(t, set); v != 1 {
				t.Fatalf("version %d after a rejected version, want 1", v)
			}
			r := set.Stats().Remote
			if r.Failures[tc.reason] == 0 || !r.Stale {
				t.Fatalf("remote stats: %+v", r)
			}
			t.Logf("rejected: %v", err)
		})
	}
}

// TestRemoteWrongToken: a wrong token is a 403, counted, not retried,
// and never in the logs; the right one from a token file works.
func TestRemoteWrongToken(t *testing.T) {
	srv := newStoreServer(t)
	srv.publish(1)
	srv.token = "right-token-value"
	tokFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokFile, []byte("wrong-token-value\n"))
	log, buf := newTestLogger(t)
	opts := remoteOpts(t.TempDir())
	opts.Logger = log
	opts.Remote.TokenFile = tokFile
	set, err := Open(srv.url(), opts)
	if err == nil {
		set.Close()
		t.Fatal("open with a wrong token succeeded")
	}
	if reason, _ := reasonOf(err); reason != ReasonForbidden {
		t.Fatalf("reason %q: %v", reason, err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests for one check with a wrong token, want 1", n)
	}
	writeFile(t, tokFile, []byte("right-token-value\n"))
	set, err = Open(srv.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if v := setVersion(t, set); v != 1 {
		t.Fatalf("version %d", v)
	}
	if strings.Contains(buf.String(), "token-value") {
		t.Fatalf("a token reached the log:\n%s", buf.String())
	}
	// A password in the URL is not in errors or logs either.
	srv.stop()
	withPass := strings.Replace(srv.url(), "http://", "http://fleet:hunter2@", 1)
	set1, err := Open(withPass, opts) // the same source: the cache serves
	if err != nil || strings.Contains(set1.Stats().Remote.StaleReason, "hunter2") || set1.Stats().Remote.Source != srv.url() {
		t.Fatalf("open with the store down: %v", err)
	}
	set1.Close()
	set2, err := Open(withPass, remoteOpts(t.TempDir()))
	if err == nil {
		set2.Close()
	}
	if strings.Contains(buf.String(), "hunter2") || err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a password reached the log or an error: %v\n%s", err, buf.String())
	}
}

func TestIsRemote(t *testing.T) {
	for p, want := range map[string]bool{
		"https://h/x/MANIFEST.json": true, "HTTP://h/": true, "s3://b/p/": true,
		"/var/lib/tables": false, "tables/MANIFEST.json": false, "s3:/x": false,
	} {
		if got := IsRemote(p); got != want {
			t.Errorf("IsRemote(%q) = %v", p, got)
		}
	}
	if _, err := Open("https://example.invalid/MANIFEST.json", Options{}); err == nil || !strings.Contains(err.Error(), "cache") {
		t.Fatalf("a remote set without a cache directory: %v", err)
	}
}

// TestRemoteRejectedVersionNotDownloadedAgain: a version rejected for a
// bad artifact is not downloaded again at every check; the checks that
// find the same manifest skip it (1, then 3, ...), and once the artifact is
// put right in the store under the same manifest it is taken.
func TestRemoteRejectedVersionNotDownloadedAgain(t *testing.T) {
	srv := newStoreServer(t)
	set := openPublished(t, srv)
	m2 := writeVersion(t, srv.dir, 2)
	p := filepath.Join(srv.dir, m2.Tables[0].File)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	writeFile(t, p, bad)
	srv.putManifest(m2)

	if err := set.Reload(); err == nil {
		t.Fatal("the bad version was accepted")
	}
	first := srv.count(m2.Tables[0].File)
	if first == 0 {
		t.Fatal("the bad artifact was never downloaded")
	}
	// The next check finds the same manifest: the same error, no download.
	err = set.Reload()
	if reason, _ := reasonOf(err); reason != ReasonDigest {
		t.Fatalf("second check: %v", err)
	}
	if n := srv.count(m2.Tables[0].File); n != first {
		t.Fatalf("the rejected artifact was downloaded again: %d downloads, then %d", first, n)
	}
	// Then it is tried again; put right, it is taken within a few checks.
	writeFile(t, p, good)
	for i := 0; i < 8 && setVersion(t, set) != 2; i++ {
		_ = set.Reload()
	}
	if v := setVersion(t, set); v != 2 {
		t.Fatalf("version %d after the artifact was put right, want 2", v)
	}
}

// TestRemoteRedirectsStayOnTheStore: a redirect to another host is not
// followed (the token would go with it), and a URL that does not parse is
// reported without its password.
func TestRemoteRedirectsStayOnTheStore(t *testing.T) {
	other := newStoreServer(t)
	other.publish(1)
	var gotAuth atomic.Bool
	other.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			gotAuth.Store(true)
		}
		other.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirector := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.url(), http.StatusFound)
	})}
	go func() { _ = redirector.Serve(ln) }()
	t.Cleanup(func() { redirector.Close() })
	opts := remoteOpts(t.TempDir())
	opts.Remote.Token = "redirect-secret"
	set, err := Open("http://"+ln.Addr().String()+"/tables/"+ManifestName, opts)
	if err == nil {
		set.Close()
		t.Fatal("a redirect to another host was followed")
	}
	if gotAuth.Load() {
		t.Fatal("the token went to the other host")
	}
	if !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("error: %v", err)
	}

	_, err = Open("https://fleet:hunt%zzer2@example.invalid/x/", remoteOpts(t.TempDir()))
	if err == nil || strings.Contains(err.Error(), "hunt") {
		t.Fatalf("a URL that does not parse: %v", err)
	}
}
