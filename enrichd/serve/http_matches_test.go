package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/tables"
)

// matchSet builds a set of an IoC suffix table (ioc), a port-range table
// with nested ranges (ports, narrowest first) and an exact table (hosts).
func matchSet(t testing.TB) *tables.Set {
	t.Helper()
	dir := t.TempDir()
	for _, tb := range []struct {
		name string
		rows *source.Rows
		opts compile.Options
	}{
		{"ioc", &source.Rows{Header: []string{"domain", "threat"}, Data: [][]string{
			{"*.evil.com", "malware"}, {"c2.evil.com", "botnet"}, {"x.c2.evil.com", "beacon"}, {"good.org", "none"},
		}}, compile.Options{Key: []string{"domain"}, Match: compile.MatchSuffix}},
		{"ports", &source.Rows{Header: []string{"from", "to", "service"}, Data: [][]string{
			{"0", "1023", "system"}, {"1024", "49151", "registered"}, {"443", "443", "https"}, {"400", "499", "web"},
		}}, compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, Overlap: "narrowest"}},
		{"hosts", &source.Rows{Header: []string{"host", "owner"}, Data: [][]string{{"web01", "ann"}}},
			compile.Options{Key: []string{"host"}}},
		{"leases", &source.Rows{Header: []string{"ip", "start", "end", "user"}, Data: [][]string{
			{"10.0.0.1", "100", "300", "ann"}, {"10.0.0.1", "200", "400", "bob"}, {"10.0.0.1", "300", "", "carl"},
		}}, compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end", Overlap: "first"}},
		{"cgnat", &source.Rows{Header: []string{"from", "to", "start", "end", "user"}, Data: [][]string{
			{"1024", "2047", "", "43200", "sub-17"}, {"1024", "2047", "43200", "", "sub-42"}, {"1024", "65535", "", "", "pool"},
		}}, compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: "narrowest"}},
	} {
		if _, err := compile.File(tb.rows, filepath.Join(dir, tb.name+".lut"), tb.opts); err != nil {
			t.Fatal(err)
		}
	}
	set, err := tables.Open(dir, tables.Options{DataVerify: tables.DataVerifyNone, NoWatch: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

// threats decodes an answer of rows as the values of column col: one row
// gives one value, an array its values in order.
func threats(t *testing.T, body, col string) []string {
	t.Helper()
	var rows []map[string]string
	if strings.HasPrefix(body, "{") {
		var row map[string]string
		if err := json.Unmarshal([]byte(body), &row); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		rows = append(rows, row)
	} else if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := []string{}
	for _, r := range rows {
		out = append(out, r[col])
	}
	return out
}

// TestHTTPMaxMatches looks keys up over HTTP on 127.0.0.1 with net/http's
// client: max_matches answers an array of the rows, the most specific
// first, and a miss is a 404 as without it.
func TestHTTPMaxMatches(t *testing.T) {
	srv := httptest.NewServer(NewAPI(matchSet(t), HTTPOptions{Listen: "127.0.0.1:0"}).Handler(http.NotFoundHandler()))
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
		col  string
		want []string
		obj  bool // a row, not an array
	}{
		{"/v1/tables/ioc/a.x.c2.evil.com", 200, "threat", []string{"beacon"}, true},
		{"/v1/tables/ioc/a.x.c2.evil.com?max_matches=1", 200, "threat", []string{"beacon"}, true},
		{"/v1/tables/ioc/a.x.c2.evil.com?max_matches=3", 200, "threat", []string{"beacon", "botnet", "malware"}, false},
		{"/v1/tables/ioc/A.X.C2.Evil.com?max_matches=2", 200, "threat", []string{"beacon", "botnet"}, false},
		{"/v1/tables/ioc/www.evil.com?max_matches=5", 200, "threat", []string{"malware"}, false},
		{"/v1/tables/ioc/notevil.com?max_matches=5", 404, "", nil, false},
		{"/v1/tables/ports/443?max_matches=10", 200, "service", []string{"https", "web", "system"}, false},
		{"/v1/tables/ports/450?sep=%2C&max_matches=10", 200, "service", []string{"web", "system"}, false},
		{"/v1/tables/ports/443", 200, "service", []string{"https"}, true},
		{"/v1/tables/ports/2000?max_matches=2", 200, "service", []string{"registered"}, false},
		{"/v1/tables/ports/70000?max_matches=2", 404, "", nil, false},
		{"/v1/tables/hosts/web01?max_matches=4", 200, "owner", []string{"ann"}, false},
		{"/v1/tables/hosts/web02?max_matches=4", 404, "", nil, false},
		{"/v1/tables/ioc/evil.com?max_matches=0", 400, "", nil, false},
		{"/v1/tables/ioc/evil.com?max_matches=1001", 400, "", nil, false},
		{"/v1/tables/ioc/evil.com?max_matches=two", 400, "", nil, false},
	} {
		code, body := httpDo(t, "GET", srv.URL+c.path, "", "")
		if code != c.code {
			t.Errorf("GET %s: %d %s, want %d", c.path, code, body, c.code)
			continue
		}
		if code != 200 {
			continue
		}
		if c.obj != strings.HasPrefix(body, "{") || !strings.HasSuffix(body, "\n") {
			t.Errorf("GET %s: %q, want an object %v", c.path, body, c.obj)
		}
		if got := threats(t, body, c.col); !reflect.DeepEqual(got, c.want) {
			t.Errorf("GET %s: %v, want %v (%s)", c.path, got, c.want, body)
		}
	}

	// _batch: an array (or null) per key, in the keys' order.
	code, body := httpDo(t, "POST", srv.URL+"/v1/tables/ioc/_batch?max_matches=2", "", `["a.x.c2.evil.com","nope.net",null,"www.evil.com"]`)
	if code != 200 {
		t.Fatalf("_batch: %d %s", code, body)
	}
	var got []json.RawMessage
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 4 {
		t.Fatalf("_batch answer %s: %v", body, err)
	}
	want := [][]string{{"beacon", "botnet"}, nil, nil, {"malware"}}
	for i, g := range got {
		if want[i] == nil {
			if string(g) != "null" {
				t.Errorf("_batch key %d: %s, want null", i, g)
			}
			continue
		}
		if gs := threats(t, string(g), "threat"); !reflect.DeepEqual(gs, want[i]) || g[0] != '[' {
			t.Errorf("_batch key %d: %s, want %v", i, g, want[i])
		}
	}
	// An .mmdb table answers one network: an array of one.
	srv2 := httptest.NewServer(NewAPI(testSet(t, 10), HTTPOptions{Listen: "127.0.0.1:0"}).Handler(http.NotFoundHandler()))
	defer srv2.Close()
	code, body = httpDo(t, "GET", srv2.URL+"/v1/tables/geo/8.8.8.8?max_matches=3", "", "")
	var recs []struct {
		Network string `json:"network"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &recs) != nil || len(recs) != 1 || recs[0].Network == "" {
		t.Errorf("mmdb with max_matches: %d %s", code, body)
	}
	code, body = httpDo(t, "POST", srv2.URL+"/v1/tables/geo/_batch?max_matches=3", "", `["8.8.8.8","10.255.255.255"]`)
	if code != 200 || !strings.HasPrefix(body, `[[{"network":`) || !strings.HasSuffix(body, "}],null]\n") {
		t.Errorf("mmdb _batch with max_matches: %d %s", code, body)
	}
}

// TestHTTPAt: the at parameter (epoch seconds or RFC 3339) looks
// time-bounded tables up at that time, with max_matches too, in a GET and
// a _batch; without it they answer at the current time; exact tables
// ignore it; a value that is no time is a 400.
func TestHTTPAt(t *testing.T) {
	srv := httptest.NewServer(NewAPI(matchSet(t), HTTPOptions{Listen: "127.0.0.1:0"}).Handler(http.NotFoundHandler()))
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
		col  string
		want []string
	}{
		{"/v1/tables/leases/10.0.0.1?at=250", 200, "user", []string{"ann"}},
		{"/v1/tables/leases/10.0.0.1?at=250&max_matches=3", 200, "user", []string{"ann", "bob"}},
		{"/v1/tables/leases/10.0.0.1?max_matches=3&at=1970-01-01T00:05:00Z", 200, "user", []string{"bob", "carl"}},
		{"/v1/tables/leases/10.0.0.1?at=1970-01-01T00%3A05%3A00%2B00%3A00", 200, "user", []string{"bob"}},
		{"/v1/tables/leases/10.0.0.1?at=99", 404, "", nil},
		{"/v1/tables/leases/10.0.0.1", 200, "user", []string{"carl"}}, // now
		{"/v1/tables/cgnat/1500?at=43199", 200, "user", []string{"sub-17"}},
		{"/v1/tables/cgnat/1500?at=43200&max_matches=5", 200, "user", []string{"sub-42", "pool"}},
		{"/v1/tables/cgnat/5000?at=0", 200, "user", []string{"pool"}},
		{"/v1/tables/hosts/web01?at=5", 200, "owner", []string{"ann"}},
		{"/v1/tables/leases/10.0.0.1?at=yesterday", 400, "", nil},
	} {
		code, body := httpDo(t, "GET", srv.URL+c.path, "", "")
		if code != c.code {
			t.Errorf("GET %s: %d %s, want %d", c.path, code, body, c.code)
			continue
		}
		if code == 200 {
			if got := threats(t, body, c.col); !reflect.DeepEqual(got, c.want) {
				t.Errorf("GET %s: %v, want %v (%s)", c.path, got, c.want, body)
			}
		}
	}
	code, body := httpDo(t, "POST", srv.URL+"/v1/tables/cgnat/_batch?at=43199&max_matches=2", "", "1500\n9\n2047\n")
	if code != 200 || body != `[[{"from":"1024","to":"2047","start":"","end":"43200","user":"sub-17"},{"from":"1024","to":"65535","start":"","end":"","user":"pool"}],null,`+
		`[{"from":"1024","to":"2047","start":"","end":"43200","user":"sub-17"},{"from":"1024","to":"65535","start":"","end":"","user":"pool"}]]`+"\n" {
		t.Errorf("_batch at 43199: %d %s", code, body)
	}
}

// TestHTTPMaxMatchesAllocs: a GET of several matches allocates nothing
// once its buffers have grown, as a GET of one.
func TestHTTPMaxMatchesAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector")
	}
	api := NewAPI(matchSet(t), HTTPOptions{})
	w := &nullWriter{h: http.Header{}}
	for _, path := range []string{"/v1/tables/ioc/a.x.c2.evil.com?max_matches=3", "/v1/tables/ports/443?max_matches=3",
		"/v1/tables/leases/10.0.0.1?at=250", "/v1/tables/cgnat/1500?max_matches=2&at=1970-01-01T12:00:00Z"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		api.ServeHTTP(w, req)
		if w.code != 0 || w.n == 0 {
			t.Fatalf("%s: code %d, %d bytes", path, w.code, w.n)
		}
		if n := testing.AllocsPerRun(1000, func() { api.ServeHTTP(w, req) }); n != 0 {
			t.Errorf("%v allocations per GET %s, want 0", n, path)
		}
	}
}

// TestMemcachedMaxMatches reads keys with gomemcache from a listener with
// MaxMatches: the value is the array of rows (or of one column's values),
// and a key that matches nothing misses.
func TestMemcachedMaxMatches(t *testing.T) {
	set := matchSet(t)
	_, addr := startMemcachedOn(t, NewMemcached(set, MemcachedOptions{DefaultTable: "ioc", MaxMatches: 2}))
	mc := memcache.New(addr)
	it, err := mc.Get("a.x.c2.evil.com")
	if err != nil {
		t.Fatal(err)
	}
	if got := threats(t, string(it.Value), "threat"); !reflect.DeepEqual(got, []string{"beacon", "botnet"}) || it.Value[0] != '[' {
		t.Errorf("value %s", it.Value)
	}
	it, err = mc.Get("ports:443")
	if err != nil {
		t.Fatal(err)
	}
	if got := threats(t, string(it.Value), "service"); !reflect.DeepEqual(got, []string{"https", "web"}) {
		t.Errorf("ports:443 value %s", it.Value)
	}
	if _, err := mc.Get("notevil.com"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("a key that matches nothing: %v, want a miss", err)
	}
	_, addr = startMemcachedOn(t, NewMemcached(set, MemcachedOptions{DefaultTable: "ioc", MaxMatches: 5, ValueColumn: "threat"}))
	it, err = memcache.New(addr).Get("a.x.c2.evil.com")
	if err != nil || string(it.Value) != `["beacon","botnet","malware"]` {
		t.Errorf("value_column with max_matches: %v %q", err, it.Value)
	}
}

// TestMemcachedMaxMatchesAllocs: a pipelined get of several matches
// allocates nothing once the connection's buffers have grown.
func TestMemcachedMaxMatchesAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector")
	}
	s := NewMemcached(matchSet(t), MemcachedOptions{DefaultTable: "ioc", MaxMatches: 3})
	req := []byte("get a.x.c2.evil.com ports:443 nope.net\r\n")
	in := bytes.NewReader(req)
	var out strings.Builder
	c := s.newConn(in, &out)
	run := func() {
		in.Reset(req)
		c.r.Reset(c.in)
		c.textStep()
		if err := c.w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if !strings.Contains(out.String(), `[{"domain":"x.c2.evil.com"`) || !strings.HasSuffix(out.String(), "END\r\n") {
		t.Fatalf("answer %q", out.String())
	}
	c.w.Reset(io.Discard)
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Errorf("%v allocations per pipelined get, want 0", n)
	}
}
