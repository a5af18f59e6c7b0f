package serve

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/tables"
)

// HTTPOptions configure the HTTP lookup API.
type HTTPOptions struct {
	// Token, when set, must be presented as "Authorization: Bearer TOKEN"
	// on every /v1/ request.
	Token string
	// Clients, when set, lets HTTPS clients whose verified certificate
	// has one of these names (see listen.Allowed) use the API without the
	// token.
	Clients []string
	// Listen is the address the HTTP server is bound to. When it is not a
	// loopback address and neither Token nor Clients is set, the API
	// refuses every request (403): tables must not be readable from the
	// network without authentication.
	Listen string
	// MaxBatchBytes bounds a _batch request body (default 16 MiB).
	MaxBatchBytes int
}

// DefaultMaxBatchBytes is the default bound on a _batch body.
const DefaultMaxBatchBytes = 16 << 20

// API is the HTTP lookup API:
//
//	GET  /v1/tables                 the tables: name, kind, rows, generation, digest,
//	                                and the set's version (the manifest's SHA256)
//	                                and its source (path or URL) when it has a manifest
//	GET  /v1/tables/NAME/KEY        the row as {"column":"value",...}; 404 when absent.
//	                                An .mmdb table takes an address and answers
//	                                {"network":"...","record":{...}}.
//	POST /v1/tables/NAME/_batch     a JSON array of keys, or one key per line;
//	                                answers a JSON array with the row (or null) per key,
//	                                written as the keys are looked up.
//
// Both lookups take ?max_matches=N: up to N rows per key, as a JSON
// array, the most specific first; and ?at=TIME, the time at which
// time-bounded tables are looked up (http_matches.go).
//
// Composite keys are given with their parts joined by "," (or by the
// "sep" query parameter).
type API struct {
	set      *liveSet
	auth     Auth
	disabled bool
	maxBatch int
	pool     sync.Pool
}

type httpBuf struct {
	out  []byte
	key  []byte
	body []byte
	// esc holds a _batch key whose JSON escapes are decoded.
	esc []byte
	// views holds the rows of a max_matches lookup (http_matches.go).
	views []reader.View
}

var (
	ctJSON  = []string{"application/json"}
	noSniff = []string{"nosniff"}
)

// NewAPI returns the API over set.
func NewAPI(set *tables.Set, opts HTTPOptions) *API {
	a := &API{set: newLiveSet(set), auth: Auth{Token: opts.Token, Clients: opts.Clients}, maxBatch: opts.MaxBatchBytes}
	if a.maxBatch <= 0 {
		a.maxBatch = DefaultMaxBatchBytes
	}
	if a.auth.Open() && opts.Listen != "" && !IsLoopback(opts.Listen) {
		a.disabled = true
	}
	a.pool.New = func() any { return &httpBuf{out: make([]byte, 0, 4096), key: make([]byte, 0, 256)} }
	return a
}

// Disabled reports whether the API refuses every request because it is
// bound to a non-loopback address without a token.
func (a *API) Disabled() bool { return a.disabled }

// IsLoopback reports whether the HOST:PORT address binds only loopback
// interfaces ("localhost", 127.0.0.0/8, ::1).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler returns a handler serving the API under /v1/ and next for every
// other path (the daemon's metrics and health endpoints).
func (a *API) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1" {
			a.serveGuarded(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func httpError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h["Content-Type"] = ctJSON
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(code)
	b := make([]byte, 0, len(msg)+16)
	b = append(b, `{"error":`...)
	b = jsonstr.AppendStringS(b, msg)
	b = append(b, "}\n"...)
	answer(w, b)
}

// methodNotAllowed answers 405 with the Allow header (the methods the
// path takes) that RFC 9110 requires of it.
func methodNotAllowed(w http.ResponseWriter, allow, msg string) {
	w.Header()["Allow"] = []string{allow}
	httpError(w, http.StatusMethodNotAllowed, msg)
}

// answer writes an answer's body. A failed write means the client has gone:
// net/http closes the connection, and no one is left to tell.
func answer(w http.ResponseWriter, b []byte) {
	_, _ = w.Write(b)
}

// ServeHTTP serves /v1/ requests.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.disabled {
		httpError(w, http.StatusForbidden, "the lookup API on a non-loopback address needs http.token (or token_file) or http.api_clients")
		return
	}
	if !a.auth.Allows(r) {
		unauthorized(w, a.auth)
		return
	}
	p := r.URL.Path
	if p == "/v1/tables" || p == "/v1/tables/" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD", "use GET")
			return
		}
		a.list(w)
		return
	}
	rest, ok := strings.CutPrefix(p, "/v1/tables/")
	if !ok {
		httpError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	name, key, ok := strings.Cut(rest, "/")
	if !ok || name == "" || key == "" {
		httpError(w, http.StatusNotFound, "use /v1/tables/NAME/KEY")
		return
	}
	sep := querySep(r.URL.RawQuery)
	var lq lookupQuery
	var msg string
	lq.max, msg = queryMaxMatches(r.URL.RawQuery)
	if msg == "" {
		lq.at, lq.timed, msg = queryAt(r.URL.RawQuery)
	}
	if msg != "" {
		httpError(w, http.StatusBadRequest, msg)
		return
	}
	if key == "_batch" {
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST", "use POST")
			return
		}
		a.batch(w, r, name, sep, lq)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD", "use GET")
		return
	}
	a.get(w, name, key, sep, lq)
}

// querySep returns the "sep" query parameter, unescaped: the first one,
// as net/url reads it, and "," when that one is absent or empty.
func querySep(q string) string {
	v := queryParam(q, "sep")
	if strings.ContainsAny(v, "%+") {
		if u, err := unescapeQuery(v); err == nil {
			v = u
		}
	}
	if v == "" {
		return ","
	}
	return v
}

func (a *API) get(w http.ResponseWriter, name, key, sep string, lq lookupQuery) {
	snap := a.set.Acquire()
	defer snap.Release()
	hb := a.pool.Get().(*httpBuf)
	defer a.pool.Put(hb)
	if t := snap.LUT(name); t != nil {
		var k []byte
		k, hb.key = tableKey(t, sbytes(key), sbytes(sep), hb.key)
		if lq.max > 1 {
			var ok bool
			hb.out, ok = appendMatches(hb.out[:0], t, k, hb.matchViews(lq.max), lq)
			if !ok {
				httpError(w, http.StatusNotFound, "not found")
				return
			}
		} else {
			v, ok := lq.lookup(t, k)
			if !ok {
				httpError(w, http.StatusNotFound, "not found")
				return
			}
			hb.out = appendRow(hb.out[:0], t, v)
		}
		hb.out = append(hb.out, '\n')
		w.Header()["Content-Type"] = ctJSON
		answer(w, hb.out)
		return
	}
	if m := snap.MMDB(name); m != nil {
		out := hb.out[:0]
		if lq.max > 1 {
			out = append(out, '[')
		}
		out, ok, err := appendRecord(out, m, sbytes(key))
		hb.out = out
		if err != nil {
			httpError(w, http.StatusBadRequest, "table "+strconv.Quote(name)+" is an .mmdb table: its key must be an IPv4 or IPv6 address, not "+strconv.Quote(key))
			return
		}
		if !ok {
			httpError(w, http.StatusNotFound, "not found")
			return
		}
		if lq.max > 1 {
			hb.out = append(hb.out, ']')
		}
		hb.out = append(hb.out, '\n')
		w.Header()["Content-Type"] = ctJSON
		answer(w, hb.out)
		return
	}
	httpError(w, http.StatusNotFound, "no such table")
}

func (a *API) list(w http.ResponseWriter) {
	set, snap := a.set.acquire()
	defer snap.Release()
	version, source := set.Version(snap)
	b := make([]byte, 0, 1024)
	b = append(b, '[')
	for i, n := range snap.Names() {
		ts, ok := snap.Table(n)
		if !ok {
			continue
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsonstr.AppendStringS(b, ts.Name)
		b = append(b, `,"kind":`...)
		b = jsonstr.AppendStringS(b, string(ts.Kind))
		b = append(b, `,"rows":`...)
		b = strconv.AppendInt(b, ts.Rows, 10)
		b = append(b, `,"generation":`...)
		b = strconv.AppendUint(b, ts.Generation, 10)
		b = append(b, `,"digest":`...)
		b = jsonstr.AppendStringS(b, ts.Digest)
		if version != "" {
			b = append(b, `,"version":`...)
			b = jsonstr.AppendStringS(b, version)
			b = append(b, `,"source":`...)
			b = jsonstr.AppendStringS(b, source)
		}
		b = append(b, '}')
	}
	b = append(b, "]\n"...)
	w.Header()["Content-Type"] = ctJSON
	answer(w, b)
}
