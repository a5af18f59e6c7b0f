package serve

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/tables"
)

const faultRows = 50000

// faultSet opens a set of one customers table of faultRows rows and
// returns it with the table's path.
func faultSet(t *testing.T) (*tables.Set, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "customers.lut")
	if _, err := compile.File(&custSource{n: faultRows}, path, compile.Options{Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	set, err := tables.Open(dir, tables.Options{DataVerify: tables.DataVerifyNone, NoWatch: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set, path
}

func truncateHalf(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func faults(set *tables.Set) uint64 {
	var n uint64
	for _, f := range set.Stats().Faults {
		n += f.Faults
	}
	return n
}

// TestHTTPTableFault truncates a mapped table under the HTTP API: the
// request that faults has its connection closed, the server goes on serving, and the
// damaged table then answers "no such table".
func TestHTTPTableFault(t *testing.T) {
	set, path := faultSet(t)
	srv := httptest.NewServer(NewAPI(set, HTTPOptions{Listen: "127.0.0.1:0"}).Handler(http.NotFoundHandler()))
	defer srv.Close()
	c := &http.Client{Timeout: 10 * time.Second}
	getStatus := func(key int) (int, error) {
		resp, err := c.Get(fmt.Sprintf("%s/v1/tables/customers/%d", srv.URL, key))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if code, err := getStatus(7); err != nil || code != http.StatusOK {
		t.Fatalf("before the truncation: %d %v", code, err)
	}
	truncateHalf(t, path)
	aborted := 0
	for k := 0; k < faultRows && faults(set) == 0; k++ {
		if _, err := getStatus(k); err != nil {
			aborted++
		}
	}
	// The faulted request's connection is closed; the client may retry
	// the GET on a new connection, which then finds the table damaged.
	if faults(set) != 1 || aborted > 1 {
		t.Fatalf("%d faults, %d requests failed, want 1 fault and at most 1 failure", faults(set), aborted)
	}
	if code, err := getStatus(7); err != nil || code != http.StatusNotFound {
		t.Errorf("after the fault: %d %v, want 404", code, err)
	}
	resp, err := c.Get(srv.URL + "/v1/tables")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("list after the fault: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestMemcachedTableFault: the same for the memcached listener; the
// faulted connection is closed, a new one finds the table absent.
func TestMemcachedTableFault(t *testing.T) {
	set, path := faultSet(t)
	_, addr := startMemcachedOn(t, NewMemcached(set, MemcachedOptions{DefaultTable: "customers", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	c, r := dialMC(t, addr)
	fmt.Fprintf(c, "get 7\r\n")
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "VALUE 7") {
		t.Fatalf("before the truncation: %q %v", l, err)
	}
	_, _ = r.ReadString('\n')
	_, _ = r.ReadString('\n')
	truncateHalf(t, path)
	closed := false
	for k := 0; k < faultRows && !closed; k++ {
		fmt.Fprintf(c, "get %d\r\n", k)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				closed = true
				break
			}
			if l == "END\r\n" {
				break
			}
		}
	}
	if !closed || faults(set) != 1 {
		t.Fatalf("connection closed %v, %d faults, want a fault", closed, faults(set))
	}
	c2, r2 := dialMC(t, addr)
	fmt.Fprintf(c2, "get 7\r\n")
	if l, err := r2.ReadString('\n'); err != nil || l != "END\r\n" {
		t.Errorf("after the fault: %q %v, want a miss", l, err)
	}
}
