package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// startMemcached serves set on a fresh 127.0.0.1 port.
func startMemcached(t testing.TB, opts MemcachedOptions) (*Memcached, string) {
	t.Helper()
	set := testSet(t, 1000)
	return startMemcachedOn(t, NewMemcached(set, opts))
}

func startMemcachedOn(t testing.TB, s *Memcached) (*Memcached, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// rawExchange writes req in one write and reads until the response ends
// with one of the terminators (or the connection closes).
func rawExchange(t testing.TB, addr, req string, terms ...string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	must(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		for _, term := range terms {
			if bytes.HasSuffix(got, []byte(term)) {
				return string(got)
			}
		}
		if err != nil {
			return string(got)
		}
	}
}

func TestMemcachedClient(t *testing.T) {
	_, addr := startMemcached(t, MemcachedOptions{DefaultTable: "customers"})
	mc := memcache.New(addr)
	it, err := mc.Get("customers:7")
	if err != nil {
		t.Fatal(err)
	}
	var row map[string]string
	if err := json.Unmarshal(it.Value, &row); err != nil || row["email"] != "u7@example.com" {
		t.Errorf("%v: %s", err, it.Value)
	}
	if it, err := mc.Get("8"); err != nil || !bytes.Contains(it.Value, []byte(`"u8@example.com"`)) {
		t.Errorf("default table: %v %v", it, err)
	}
	if _, err := mc.Get("customers:99999"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("absent key: %v", err)
	}
	if it, err := mc.Get("pairs:us,1"); err != nil || !bytes.Contains(it.Value, []byte(`"bob"`)) {
		t.Errorf("composite: %v %v", it, err)
	}
	m, err := mc.GetMulti([]string{"customers:1", "customers:2", "customers:nope", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["customers:nope"] != nil || !bytes.Contains(m["3"].Value, []byte(`"Name 3"`)) {
		t.Errorf("GetMulti: %v", m)
	}
	if err := mc.Set(&memcache.Item{Key: "customers:1", Value: []byte("x")}); err == nil {
		t.Error("Set succeeded on a read-only server")
	}
	if err := mc.Delete("customers:1"); err == nil {
		t.Error("Delete succeeded on a read-only server")
	}
	// The connection is still in step after the refused write.
	if _, err := mc.Get("customers:1"); err != nil {
		t.Errorf("Get after Set: %v", err)
	}
}

func TestMemcachedValueColumn(t *testing.T) {
	_, addr := startMemcached(t, MemcachedOptions{DefaultTable: "customers", ValueColumn: "email"})
	it, err := memcache.New(addr).Get("12")
	if err != nil || string(it.Value) != "u12@example.com" {
		t.Errorf("%v %v", it, err)
	}
}

func TestMemcachedRaw(t *testing.T) {
	s, addr := startMemcached(t, MemcachedOptions{Version: "lutkit-test"})
	// Pipelined: many commands in one write, including a refused set
	// whose data block must be skipped.
	var req strings.Builder
	for i := range 50 {
		fmt.Fprintf(&req, "get customers:%d\r\n", i)
	}
	req.WriteString("set customers:1 0 0 5\r\nhello\r\n")
	req.WriteString("gets customers:1 customers:nope customers:2\r\n")
	req.WriteString("bogus\r\n")
	req.WriteString("version\r\n")
	got := rawExchange(t, addr, req.String(), "VERSION lutkit-test\r\n")
	if n := strings.Count(got, "VALUE customers:"); n != 52 {
		t.Errorf("%d VALUE lines, want 52:\n%s", n, got)
	}
	if n := strings.Count(got, "END\r\n"); n != 51 {
		t.Errorf("%d END, want 51", n)
	}
	for _, want := range []string{"SERVER_ERROR read-only\r\n", "ERROR\r\n", "VALUE customers:49 0 ", "VERSION lutkit-test\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q", want)
		}
	}
	if !regexp.MustCompile(`VALUE customers:1 0 \d+ \d+\r\n\{[^\r]*\}\r\nVALUE customers:2 0 \d+ \d+\r\n`).MatchString(got) {
		t.Errorf("gets response:\n%s", got)
	}

	for cmd, want := range map[string]string{
		"get " + strings.Repeat("k", 251) + "\r\n": "CLIENT_ERROR bad command line format\r\n",
		"get a\x01b\r\n":                    "END\r\n",
		"get\r\n":                           "ERROR\r\n",
		"\r\n":                              "ERROR\r\n",
		"delete customers:1\r\n":            "SERVER_ERROR read-only\r\n",
		"incr customers:1 1\r\n":            "SERVER_ERROR read-only\r\n",
		"touch customers:1 10\r\n":          "SERVER_ERROR read-only\r\n",
		"flush_all\r\n":                     "SERVER_ERROR read-only\r\n",
		"cas customers:1 0 0 1 5\r\nx\r\n":  "SERVER_ERROR read-only\r\n",
		"append customers:1 0 0 1\r\nx\r\n": "SERVER_ERROR read-only\r\n",
		"get customers:nope\r\n":            "END\r\n",
	} {
		if got := rawExchange(t, addr, cmd, "\r\n"); got != want {
			t.Errorf("%q: %q, want %q", cmd, got, want)
		}
	}

	// stats, then quit closes the connection.
	got = rawExchange(t, addr, "stats\r\nquit\r\nversion\r\n", "never")
	for _, want := range []string{"STAT hits ", "STAT misses ", "STAT tables 2", "STAT curr_connections ", "STAT get_hits "} {
		// The set may hold a third table, the city MMDB, when it is fetched.
		moreTables := want == "STAT tables 2" && strings.Contains(got, "STAT tables 3")
		if !strings.Contains(got, want) && !moreTables {
			t.Errorf("stats lack %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "END\r\n") || strings.Contains(got, "VERSION") {
		t.Errorf("quit did not close:\n%s", got)
	}
	if st := s.Stats(); st.Hits < 52 || st.Misses < 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestMemcachedGetAllocs checks that a get allocates nothing once the
// connection's buffers have grown.
func TestMemcachedGetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector")
	}
	set := testSet(t, 1000)
	s := NewMemcached(set, MemcachedOptions{DefaultTable: "customers"})
	req := []byte("get customers:42 7 customers:nope\r\ngets pairs:eu,1\r\n")
	in := bytes.NewReader(req)
	c := s.newConn(in, io.Discard)
	run := func() {
		in.Reset(req)
		c.r.Reset(c.in)
		c.textStep()
		c.textStep()
		if err := c.w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Errorf("%v allocations per pipelined get, want 0", n)
	}
}

// realMemcached starts the memcached binary on a free port. In CI a
// missing binary fails the test; elsewhere it skips.
func realMemcached(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("memcached is not installed (Debian package memcached, listed in .ci/apt-packages)")
		}
		t.Skip("memcached is not installed; skipping the comparison with a real memcached")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	cmd := exec.Command(bin, "-p", port, "-l", "127.0.0.1", "-U", "0", "-m", "256")
	if os.Geteuid() == 0 {
		cmd.Args = append(cmd.Args, "-u", "nobody")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Killed, the server has nothing left to report: Wait only reaps it.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("memcached did not start on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shape reduces a response to what a client relies on: VALUE lines keep
// their key and flags (not the length, and not the cas unique), data lines
// are dropped, other lines are kept up to the first space for
// VERSION/STAT and whole otherwise.
func shape(resp string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(resp))
	skip := false
	for sc.Scan() {
		l := sc.Text()
		if skip {
			skip = false
			continue
		}
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "VALUE":
			out = append(out, fmt.Sprintf("VALUE %s %s (%d fields)", f[1], f[2], len(f)))
			skip = true
		case len(f) > 0 && (f[0] == "VERSION" || f[0] == "STAT"):
			out = append(out, f[0])
		case strings.HasPrefix(l, "CLIENT_ERROR"):
			out = append(out, "CLIENT_ERROR")
		default:
			out = append(out, l)
		}
	}
	return out
}

func TestMemcachedCompare(t *testing.T) {
	real := realMemcached(t)
	s, ours := startMemcached(t, MemcachedOptions{})
	_ = s
	rc := memcache.New(real)
	for i := range 20 {
		k := fmt.Sprintf("customers:%d", i)
		ourItem, err := memcache.New(ours).Get(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Set(&memcache.Item{Key: k, Value: ourItem.Value}); err != nil {
			t.Fatal(err)
		}
	}
	for _, req := range []string{
		"get customers:1\r\n",
		"get customers:1 customers:2 customers:nope customers:3\r\n",
		"gets customers:4 customers:nope customers:5\r\n",
		"get customers:nope\r\n",
		"get customers:1\r\nget customers:2\r\ngets customers:3\r\n",
		"version\r\n",
		"bogus\r\n",
		"get\r\n",
		"get " + strings.Repeat("k", 251) + "\r\n",
	} {
		terms := []string{"END\r\n", "ERROR\r\n", "\r\n"}
		if strings.Count(req, "\r\n") > 1 {
			terms = []string{"END\r\nVALUE_never"}
		}
		n := strings.Count(req, "\r\n")
		read := func(addr string) string {
			if n > 1 {
				return readN(t, addr, req, n)
			}
			return rawExchange(t, addr, req, terms...)
		}
		a, b := read(ours), read(real)
		sa, sb := shape(a), shape(b)
		if strings.Join(sa, "|") != strings.Join(sb, "|") {
			t.Errorf("%q:\nlutkit:    %q\nmemcached: %q", req, sa, sb)
		}
	}
	// Values read through the real server and ours are the same bytes.
	it, err := rc.Get("customers:5")
	if err != nil {
		t.Fatal(err)
	}
	ourIt, err := memcache.New(ours).Get("customers:5")
	if err != nil || !bytes.Equal(it.Value, ourIt.Value) {
		t.Errorf("values differ: %v %q %q", err, it.Value, ourIt.Value)
	}
}

// readN sends req and reads until n "END\r\n" (or error lines) arrived.
func readN(t testing.TB, addr, req string, n int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send(t, c, []byte(req))
	must(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	r := bufio.NewReader(c)
	var b strings.Builder
	for n > 0 {
		l, err := r.ReadString('\n')
		b.WriteString(l)
		if err != nil {
			break
		}
		if l == "END\r\n" || strings.HasSuffix(l, "ERROR\r\n") {
			n--
		}
	}
	return b.String()
}
