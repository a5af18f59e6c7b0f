package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPLookup(t *testing.T) {
	set := testSet(t, 1000)
	srv := httptest.NewServer(NewAPI(set, HTTPOptions{Listen: "127.0.0.1:0"}).Handler(http.NotFoundHandler()))
	defer srv.Close()

	code, body := httpDo(t, "GET", srv.URL+"/v1/tables/customers/42", "", "")
	if code != 200 {
		t.Fatalf("GET 42: %d %s", code, body)
	}
	var row map[string]string
	if err := json.Unmarshal([]byte(body), &row); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := map[string]string{"id": "42", "name": "Name 42", "email": "u42@example.com", "note": "say \"hi\"\\ é"}
	for k, v := range want {
		if row[k] != v {
			t.Errorf("%s = %q, want %q (%s)", k, row[k], v, body)
		}
	}
	if code, body := httpDo(t, "GET", srv.URL+"/v1/tables/customers/100000", "", ""); code != 404 {
		t.Errorf("absent key: %d %s", code, body)
	}
	if code, _ := httpDo(t, "GET", srv.URL+"/v1/tables/nosuch/1", "", ""); code != 404 {
		t.Errorf("absent table: %d", code)
	}
	// Composite keys.
	if code, body := httpDo(t, "GET", srv.URL+"/v1/tables/pairs/us,1", "", ""); code != 200 || !strings.Contains(body, `"owner":"bob"`) {
		t.Errorf("composite: %d %s", code, body)
	}
	if code, body := httpDo(t, "GET", srv.URL+"/v1/tables/pairs/eu%7C2?sep=%7C", "", ""); code != 200 || !strings.Contains(body, `"owner":"carol"`) {
		t.Errorf("composite with sep: %d %s", code, body)
	}
	// Other paths go to the next handler.
	if code, _ := httpDo(t, "GET", srv.URL+"/metrics", "", ""); code != 404 {
		t.Errorf("next handler: %d", code)
	}
	if code, _ := httpDo(t, "POST", srv.URL+"/v1/tables/customers/1", "", "x"); code != 405 {
		t.Errorf("POST on a key: %d", code)
	}
}

func TestHTTPList(t *testing.T) {
	set := testSet(t, 10)
	srv := httptest.NewServer(NewAPI(set, HTTPOptions{}))
	defer srv.Close()
	code, body := httpDo(t, "GET", srv.URL+"/v1/tables", "", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var list []struct {
		Name       string
		Kind       string
		Rows       int64
		Generation uint64
		Digest     string
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	found := false
	for _, e := range list {
		if e.Name == "customers" {
			found = true
			if e.Rows != 10 || e.Kind != "lut" || e.Generation == 0 {
				t.Errorf("customers: %+v", e)
			}
		}
	}
	if !found {
		t.Errorf("customers not listed: %s", body)
	}
}

func TestHTTPBatch(t *testing.T) {
	set := testSet(t, 100)
	srv := httptest.NewServer(NewAPI(set, HTTPOptions{}))
	defer srv.Close()
	for _, body := range []string{`["1", "nope", 3, null, "\u0035"]`, "1\r\nnope\n3\n\n"} {
		code, out := httpDo(t, "POST", srv.URL+"/v1/tables/customers/_batch", "", body)
		if code != 200 {
			t.Fatalf("%q: %d %s", body, code, out)
		}
		var rows []map[string]string
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if rows[0]["email"] != "u1@example.com" || rows[1] != nil || rows[2]["id"] != "3" {
			t.Errorf("%q: %s", body, out)
		}
		if len(rows) == 5 && (rows[3] != nil || rows[4]["id"] != "5") {
			t.Errorf("%q: %s", body, out)
		}
	}
	if code, out := httpDo(t, "POST", srv.URL+"/v1/tables/pairs/_batch", "", `["eu,1","us,1","x,y"]`); code != 200 || out != `[{"region":"eu","id":"1","owner":"alice"},{"region":"us","id":"1","owner":"bob"},null]`+"\n" {
		t.Errorf("composite batch: %d %s", code, out)
	}
	if code, _ := httpDo(t, "POST", srv.URL+"/v1/tables/customers/_batch", "", `["1",`); code != 400 {
		t.Errorf("bad JSON: %d", code)
	}
	api := NewAPI(set, HTTPOptions{MaxBatchBytes: 10})
	srv2 := httptest.NewServer(api)
	defer srv2.Close()
	if code, _ := httpDo(t, "POST", srv2.URL+"/v1/tables/customers/_batch", "", strings.Repeat("1\n", 100)); code != 413 {
		t.Errorf("large body: %d", code)
	}
}

func TestHTTPMMDB(t *testing.T) {
	set := testSet(t, 10)
	srv := httptest.NewServer(NewAPI(set, HTTPOptions{}))
	defer srv.Close()
	code, body := httpDo(t, "GET", srv.URL+"/v1/tables/geo/8.8.8.8", "", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var v struct {
		Network string
		Record  map[string]any
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Network == "" || len(v.Record) == 0 {
		t.Errorf("%v: %s", err, body)
	}
	if p, err := netip.ParsePrefix(v.Network); err != nil || !p.Contains(netip.MustParseAddr("8.8.8.8")) {
		t.Errorf("network %q does not hold 8.8.8.8 (%v)", v.Network, err)
	}
	// The error says what the key must be, in the user's words.
	want := `{"error":"table \"geo\" is an .mmdb table: its key must be an IPv4 or IPv6 address, not \"not-an-ip\""}` + "\n"
	if code, body := httpDo(t, "GET", srv.URL+"/v1/tables/geo/not-an-ip", "", ""); code != 400 || body != want {
		t.Errorf("bad address: %d %s", code, body)
	}
	if code, _ := httpDo(t, "GET", srv.URL+"/v1/tables/geo/10.0.0.1", "", ""); code != 404 {
		t.Errorf("private address: %d", code)
	}
}

func TestHTTPToken(t *testing.T) {
	set := testSet(t, 10)
	srv := httptest.NewServer(NewAPI(set, HTTPOptions{Token: "s3cret", Listen: "0.0.0.0:8080"}))
	defer srv.Close()
	for _, tok := range []string{"", "wrong"} {
		if code, _ := httpDo(t, "GET", srv.URL+"/v1/tables/customers/1", tok, ""); code != 401 {
			t.Errorf("token %q: %d, want 401", tok, code)
		}
		if code, _ := httpDo(t, "GET", srv.URL+"/v1/tables", tok, ""); code != 401 {
			t.Errorf("list, token %q: %d, want 401", tok, code)
		}
	}
	if code, body := httpDo(t, "GET", srv.URL+"/v1/tables/customers/1", "s3cret", ""); code != 200 {
		t.Errorf("good token: %d %s", code, body)
	}
	// No token on a non-loopback address: refused.
	open := httptest.NewServer(NewAPI(set, HTTPOptions{Listen: ":8080"}))
	defer open.Close()
	if code, _ := httpDo(t, "GET", open.URL+"/v1/tables/customers/1", "", ""); code != 403 {
		t.Errorf("non-loopback without a token: %d, want 403", code)
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, ":1": false, "0.0.0.0:1": false, "10.1.2.3:1": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%s) != %v", addr, want)
		}
	}
}

// nullWriter is a reusable ResponseWriter that allocates nothing.
type nullWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) WriteHeader(c int)           { w.code = c }
func (w *nullWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func TestHTTPGetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector")
	}
	set := testSet(t, 1000)
	api := NewAPI(set, HTTPOptions{})
	req := httptest.NewRequest(http.MethodGet, "/v1/tables/customers/42", nil)
	w := &nullWriter{h: http.Header{}}
	api.ServeHTTP(w, req)
	if w.code != 0 || w.n == 0 {
		t.Fatalf("code %d, %d bytes", w.code, w.n)
	}
	if n := testing.AllocsPerRun(1000, func() { api.ServeHTTP(w, req) }); n != 0 {
		t.Errorf("%v allocations per GET, want 0", n)
	}
	// An IP table: the record is written straight from the file.
	ipReq := httptest.NewRequest(http.MethodGet, "/v1/tables/geo/8.8.8.8", nil)
	api.ServeHTTP(w, ipReq)
	if n := testing.AllocsPerRun(1000, func() { api.ServeHTTP(w, ipReq) }); n != 0 {
		t.Errorf("%v allocations per IP GET, want 0", n)
	}
}

// TestHTTPMethodNotAllowed: a method a path does not take gets 405 with
// the Allow header naming those it takes.
func TestHTTPMethodNotAllowed(t *testing.T) {
	srv := httptest.NewServer(NewAPI(testSet(t, 10), HTTPOptions{}))
	defer srv.Close()
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/v1/tables", "GET, HEAD"},
		{"DELETE", "/v1/tables/customers/1", "GET, HEAD"},
		{"GET", "/v1/tables/customers/_batch", "POST"},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q, want 405, Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
}
