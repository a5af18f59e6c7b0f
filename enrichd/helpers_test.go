package enrichd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/enrichtest"
	"github.com/lutkit/lutkit/internal/kafkatest"
	"github.com/lutkit/lutkit/internal/syncbuf"
	"github.com/lutkit/lutkit/internal/testfiles"
)

// buildCustomers compiles an n-row customers table to path. Row i has
// Index i, Customer Id "C<i>-<version>" and Email "u<i>@v<version>.example".
var buildCustomers = kafkatest.BuildCustomers

// testConfig returns a configuration with TCP (syslog and JSON) and UDP
// inputs on 127.0.0.1:0, a customers rule and a geo rule on the real city
// MMDB, writing to out.
func testConfig(t testing.TB, dir, out string) *Config {
	t.Helper()
	rules := `
  - name: customer
    table: customers
    field: cust
    target: customer
    columns: ["Customer Id", Email]
    on_miss: {tag: customer_miss, defaults: {Customer Id: MISS}}
  - name: geo
    table: geo
    field: src
    target: source.geo
    mmdb_fields: {country_code: country_iso_code, city: city_name}
`
	if err := os.Symlink(testfiles.CityMMDB(t), filepath.Join(dir, "geo.mmdb")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0", max_message_size: 4096, max_connections: 2000}
  - {name: udp, type: udp, listen: "127.0.0.1:0", max_message_size: 4096}
  - {name: json, type: tcp, listen: "127.0.0.1:0", format: json}
tables: {path: %q, verify: digest, poll_interval: 50ms}
rules:%s
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, dir, rules, out)
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	return cfg
}

type running struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
	out    string
}

func startDaemon(t testing.TB, cfg *Config) *running {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return startDaemonWith(t, cfg, logger)
}

// logBuffer is a log destination a test reads while the daemon writes.
type logBuffer = syncbuf.Buffer

// startDaemonLogged starts a daemon whose log (from level info) the test
// reads; with -v it goes to stderr too.
func startDaemonLogged(t testing.TB, cfg *Config) (*running, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	return startDaemonWith(t, cfg, slog.New(slog.NewTextHandler(w, nil))), logs
}

func startDaemonWith(t testing.TB, cfg *Config, logger *slog.Logger) *running {
	t.Helper()
	d, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{d: d, cancel: cancel, done: make(chan error, 1)}
	for _, o := range cfg.Outputs {
		if o.Type == "file" {
			r.out = o.Path
		}
	}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("daemon did not stop")
	}
}

// waitLines waits until the output holds at least n lines and returns
// them.
func waitLines(t testing.TB, path string, n int, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lines := readLines(t, path)
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d output lines, want %d", len(lines), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func hasTag(m map[string]any, tag string) bool {
	tags, _ := m["tags"].([]any)
	for _, x := range tags {
		if x == tag {
			return true
		}
	}
	return false
}

// waitMetric waits up to 10 s for a sample to reach want and returns its
// last value.
func waitMetric(t testing.TB, d *Daemon, sample string, want float64) float64 {
	t.Helper()
	var got float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = metric(t, d, sample); got >= want {
			break
		}
	}
	return got
}

// checkDeliveredCount checks that the daemon's counts of delivered
// events agree with held, the events its one output's receiver holds:
// enrichd_events_out_total and enrichd_output_events_total. A count may
// trail the receiver by the time between a write and its count, so it is
// waited for up to 10 s.
func checkDeliveredCount(t testing.TB, d *Daemon, held int) {
	t.Helper()
	out := waitMetric(t, d, "enrichd_events_out_total", float64(held))
	per := metricSum(t, d, "enrichd_output_events_total{")
	if out != float64(held) || per != float64(held) {
		t.Errorf("events_out_total %v, output_events_total %v, but the receiver holds %d events", out, per, held)
	}
}

// metric returns the value of one sample from /metrics, e.g.
// `enrichd_events_in_total{input="tcp",type="tcp"}`.
func metric(t testing.TB, d *Daemon, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, sample+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(l[len(sample):]), 64)
			return v
		}
	}
	return 0
}

func dialTCP(t testing.TB, d *Daemon, input string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", d.Addr(input).String())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// send writes b to c in full.
func send(t testing.TB, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// The test events and reading the output, shared with the engine's tests.
var (
	decode = enrichtest.Decode
	get    = enrichtest.Get
)

// eachNumbered checks that lines are the n events seq=0 to seq=n-1 (the
// message's first word), each once, in any order, and calls fn with each
// one's number, decoded line and text.
func eachNumbered(t testing.TB, lines []string, n int, fn func(seq int, m map[string]any, line string)) {
	t.Helper()
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	seen := make([]bool, n)
	for _, l := range lines {
		m := decode(t, l)
		msg, _ := m["message"].(string)
		seqText, _, _ := strings.Cut(strings.TrimPrefix(msg, "seq="), " ")
		seq, err := strconv.Atoi(seqText)
		if err != nil || seq < 0 || seq >= n || seen[seq] {
			t.Fatalf("bad or repeated seq in %s", l)
		}
		seen[seq] = true
		fn(seq, m, l)
	}
}
