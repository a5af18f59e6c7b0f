package serve_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/enrichd"
)

func writeTable(t *testing.T, dir string) {
	t.Helper()
	csv := "cust,name,tier\n1,Acme,gold\n2,Globex,silver\n"
	src, err := source.NewCSVReader(strings.NewReader(csv), "customers.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"cust"}}); err != nil {
		t.Fatal(err)
	}
}

func TestConfigKeys(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(`
inputs: [{type: tcp, listen: "127.0.0.1:0"}]
outputs: [{type: stdout}]
tables: {path: .}
http: {listen: "0.0.0.0:9514", token_file: token}
memcached: {listen: "127.0.0.1:11211", default_table: customers, value_column: tier}
`))
	if err != nil {
		t.Fatal(err)
	}
	if mc := cfg.Memcached; cfg.HTTP.Token != "abc" || mc.Listen != "127.0.0.1:11211" || mc.DefaultTable != "customers" || mc.ValueColumn != "tier" {
		t.Errorf("%+v %+v", cfg.HTTP, cfg.Memcached)
	}
	_, err = enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(`
inputs: [{type: tcp, listen: "127.0.0.1:0"}]
outputs: [{type: stdout}]
http: {listen: "127.0.0.1:1", token_file: missing}
memcached: {default_table: customers, colour: red}
`))
	for _, want := range []string{"enrichd.yaml:4:", "http.token_file", "memcached.listen: required", "memcached.colour: unknown field"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestConfigMemcachedNeedsTables(t *testing.T) {
	_, err := enrichd.ParseConfig("enrichd.yaml", []byte(`
inputs: [{type: tcp, listen: "127.0.0.1:0"}]
outputs: [{type: stdout}]
memcached: {listen: "127.0.0.1:11211"}
`))
	if err == nil || !strings.Contains(err.Error(), "tables.path: required for the memcached listener") {
		t.Errorf("error: %v", err)
	}
}

func TestDaemonServes(t *testing.T) {
	dir := t.TempDir()
	writeTable(t, dir)
	cfg, err := enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(`
inputs: [{type: tcp, listen: "127.0.0.1:0"}]
outputs: [{type: stdout}]
tables: {path: .}
http: {listen: "127.0.0.1:0", token: t0k}
memcached: {listen: "127.0.0.1:0", default_table: customers}
drain_read_grace: 50ms
`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := enrichd.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop")
		}
	}()
	base := "http://" + d.HTTPAddr().String()
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		var resp *http.Response
		for i := 0; ; i++ {
			if resp, err = http.DefaultClient.Do(req); err == nil || i > 50 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/tables/customers/2", "t0k"); code != 200 || body != `{"cust":"2","name":"Globex","tier":"silver"}`+"\n" {
		t.Errorf("%d %s", code, body)
	}
	if code, _ := get("/v1/tables/customers/2", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code, _ := get("/healthz", ""); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	it, err := memcache.New(d.MemcachedAddr().String()).Get("1")
	if err != nil || string(it.Value) != `{"cust":"1","name":"Acme","tier":"gold"}` {
		t.Errorf("memcached: %v %v", it, err)
	}
}
