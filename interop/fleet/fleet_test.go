// Package fleet_test runs enrichd nodes that pull their tables from real
// stores on 127.0.0.1: nginx over mutual TLS with a bearer token, and an
// S3-compatible server (gofakes3), with sets built by "lut build" and
// uploaded by "lut publish" (package tablebuild).
package fleet_test

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
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
	"github.com/lutkit/lutkit/tables/tablebuild"
)

const rows = 3000

// buildVersion builds a set of two tables, customers and accounts, whose
// every value carries the version: "C<i>-<v>" and "O<i>-<v>". It returns
// the built directory and the version's digest (the manifest's SHA256).
func buildVersion(t *testing.T, version int) (string, string) {
	t.Helper()
	src := t.TempDir()
	var c, a strings.Builder
	c.WriteString("Index,Customer Id\n")
	a.WriteString("Index,Owner\n")
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&c, "%d,C%d-%d\n", i, i, version)
		fmt.Fprintf(&a, "%d,O%d-%d\n", i, i, version)
	}
	writeFile(t, filepath.Join(src, "customers.csv"), []byte(c.String()))
	writeFile(t, filepath.Join(src, "accounts.csv"), []byte(a.String()))
	yml := `version: 1
tables:
  - {name: customers, kind: lut, sources: [customers.csv], key: Index}
  - {name: accounts, kind: lut, sources: [accounts.csv], key: Index}
`
	cfgPath := filepath.Join(src, "tables.yaml")
	writeFile(t, cfgPath, []byte(yml))
	cfg, err := tablebuild.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	if _, err := tablebuild.Build(context.Background(), cfg, out, tablebuild.Options{Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return out, fsutil.BytesSHA256(b)
}

func publish(t *testing.T, dist, dest string, opts tablebuild.PublishOptions) {
	t.Helper()
	if _, err := tablebuild.Publish(context.Background(), dist, dest, opts); err != nil {
		t.Fatalf("publish %s to %s: %v", dist, dest, err)
	}
}

func artifacts(t *testing.T, dist string) []string {
	t.Helper()
	m, err := tables.ReadManifest(filepath.Join(dist, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range m.Tables {
		out = append(out, a.File)
	}
	return out
}

// node is an enrichd daemon with a sender streaming events into it.
type node struct {
	name string
	d    *enrichd.Daemon
	out  string
	stop context.CancelFunc
	done chan error

	sent     atomic.Int64
	sendStop chan struct{}
	sendDone chan error
}

// startNode starts a daemon whose tables section is tablesYAML.
func startNode(t *testing.T, name, tablesYAML string) *node {
	t.Helper()
	return startNodeWith(t, name, tablesYAML, `  - {name: customer, table: customers, field: cust, target: customer, columns: ["Customer Id"]}
  - {name: account, table: accounts, field: cust, target: account, columns: [Owner]}`)
}

// startNodeWith starts a daemon whose tables and rules sections are
// tablesYAML and rulesYAML.
func startNodeWith(t *testing.T, name, tablesYAML, rulesYAML string) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{name: name, out: filepath.Join(dir, "out.json")}
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
tables:
%s
rules:
%s
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, tablesYAML, rulesYAML, n.out)
	cfg, err := enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", name)
	}
	d, err := enrichd.New(cfg, logger)
	if err != nil {
		t.Fatalf("node %s: %v", name, err)
	}
	n.d = d
	ctx, cancel := context.WithCancel(context.Background())
	n.stop, n.done = cancel, make(chan error, 1)
	go func() { n.done <- d.Run(ctx) }()
	t.Cleanup(func() { n.shutdown(t) })
	for start := time.Now(); !d.Ready(); {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("node %s not ready", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

func (n *node) shutdown(t *testing.T) {
	if n.stop == nil {
		return
	}
	n.stopSending(t)
	n.stop()
	n.stop = nil
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("node %s: Run: %v", n.name, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("node %s did not stop", n.name)
	}
}

// startSending streams events "seq=N cust=K" into the node until
// stopSending, paced so that five nodes share two cores with the stores.
func (n *node) startSending(t *testing.T) {
	t.Helper()
	c, err := net.Dial("tcp", n.d.Addr("tcp").String())
	if err != nil {
		t.Fatal(err)
	}
	n.sendStop, n.sendDone = make(chan struct{}), make(chan error, 1)
	go func() {
		w := bufio.NewWriter(c)
		for seq := 0; ; seq++ {
			select {
			case <-n.sendStop:
				err := w.Flush()
				if cerr := c.Close(); err == nil {
					err = cerr
				}
				n.sendDone <- err
				return
			default:
			}
			fmt.Fprintf(w, "<134>1 2026-12-01T05:24:00.000Z h app 1 m - seq=%d cust=%d\n", seq, seq%rows+1)
			n.sent.Add(1)
			if seq%50 == 49 {
				if err := w.Flush(); err != nil {
					c.Close()
					n.sendDone <- err
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
}

func (n *node) stopSending(t *testing.T) {
	if n.sendStop == nil {
		return
	}
	close(n.sendStop)
	if err := <-n.sendDone; err != nil {
		t.Errorf("node %s: sending: %v", n.name, err)
	}
	n.sendStop = nil
}

// version is the version digest the node serves.
func (n *node) version() string { return n.d.Set().Stats().Version }

func (n *node) remote() tables.RemoteStats { return *n.d.Set().Stats().Remote }

func (n *node) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + n.d.HTTPAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

var lineRE = regexp.MustCompile(`"message":"seq=(\d+) cust=(\d+)".*"customer":\{"Customer Id":"C(\d+)-(\d+)"\}.*"account":\{"Owner":"O(\d+)-(\d+)"\}`)

// checkOutput waits for every event sent to the node to be written and
// checks each was enriched once, from one version: it returns the events
// per version.
func (n *node) checkOutput(t *testing.T) map[string]int {
	t.Helper()
	want := int(n.sent.Load())
	var lines []string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		lines = readLines(t, n.out)
		if len(lines) >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: %d events written, %d sent", n.name, len(lines), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(lines) != want {
		t.Fatalf("node %s: %d events written, %d sent", n.name, len(lines), want)
	}
	seen := make([]bool, want)
	versions := map[string]int{}
	for _, l := range lines {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("node %s: unexpected line %s", n.name, l)
		}
		seq, _ := strconv.Atoi(m[1])
		if seq >= want || seen[seq] {
			t.Fatalf("node %s: seq %d twice or unknown", n.name, seq)
		}
		seen[seq] = true
		if m[2] != m[3] || m[3] != m[5] || m[4] != m[6] {
			t.Fatalf("node %s: an event enriched from a mix of versions: %s", n.name, l)
		}
		versions[m[4]]++
	}
	return versions
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// waitAll waits until cond holds for every node, and returns how long it
// took.
func waitAll(t *testing.T, nodes []*node, timeout time.Duration, what string, cond func(*node) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok := true
		for _, n := range nodes {
			if !cond(n) {
				ok = false
				break
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("after %v: not every node %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rollout is the acceptance scenario: publish v1, start five nodes,
// stream events into each, publish v2: every node serves v2 within two
// poll intervals, no event is lost or enriched from a mix, each artifact
// is downloaded once per node, and unchanged polls transfer nothing.
func rollout(t *testing.T, dest string, popts tablebuild.PublishOptions, poll time.Duration, nodeTables func(i int) string) (nodes []*node, dist1, dist2 string) {
	dist1, v1 := buildVersion(t, 1)
	dist2, v2 := buildVersion(t, 2)
	publish(t, dist1, dest, popts)
	for i := range 5 {
		nodes = append(nodes, startNode(t, fmt.Sprintf("node%d", i+1), nodeTables(i)))
	}
	for _, n := range nodes {
		if n.version() != v1 {
			t.Fatalf("node %s serves %q, want v1 %s", n.name, n.version(), v1)
		}
		n.startSending(t)
	}
	// Polls of the unchanged manifest: answered "not modified", no bytes.
	bytes0 := map[string]uint64{}
	for _, n := range nodes {
		bytes0[n.name] = n.remote().Bytes
	}
	waitAll(t, nodes, 10*poll, "polled the unchanged manifest twice", func(n *node) bool { return n.remote().NotModified >= 2 })
	for _, n := range nodes {
		if r := n.remote(); r.Bytes != bytes0[n.name] || r.Downloads != 2 {
			t.Fatalf("node %s: unchanged polls transferred %d bytes, %d downloads", n.name, r.Bytes-bytes0[n.name], r.Downloads)
		}
	}

	publish(t, dist2, dest, popts)
	took := waitAll(t, nodes, 10*poll, "serves v2", func(n *node) bool { return n.version() == v2 })
	t.Logf("every node on v2 %v after the publish (poll interval %v)", took.Round(time.Millisecond), poll)
	if took > 2*poll {
		t.Errorf("the rollout took %v, more than two poll intervals (%v)", took, 2*poll)
	}
	// Events keep flowing on v2 for a moment.
	time.Sleep(poll / 2)
	for _, n := range nodes {
		n.stopSending(t)
	}
	for _, n := range nodes {
		versions := n.checkOutput(t)
		t.Logf("node %s: %d events, by version %v", n.name, n.sent.Load(), versions)
		if versions["1"] == 0 || versions["2"] == 0 || len(versions) != 2 {
			t.Errorf("node %s: events by version %v", n.name, versions)
		}
		r := n.remote()
		for _, dist := range []string{dist1, dist2} {
			for _, f := range artifacts(t, dist) {
				if r.DownloadsByFile[f] != 1 {
					t.Errorf("node %s: %s downloaded %d times", n.name, f, r.DownloadsByFile[f])
				}
			}
		}
		if r.Stale || r.Downloads != 4 {
			t.Errorf("node %s: %+v", n.name, r)
		}
		metrics := n.get(t, "/metrics")
		if !strings.Contains(metrics, `version="`+v2+`"} 1`) || !strings.Contains(metrics, "enrichd_tables_stale 0") {
			t.Errorf("node %s: metrics lack the version info of v2 or say stale:\n%s", n.name, grepLines(metrics, "enrichd_tables"))
		}
		if list := n.get(t, "/v1/tables"); !strings.Contains(list, `"version":"`+v2+`"`) {
			t.Errorf("node %s: /v1/tables: %s", n.name, list)
		}
	}
	return nodes, dist1, dist2
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFleetNginx: five nodes follow a set served by nginx over TLS (a CA
// the test makes, client certificates required) with a bearer token.
func TestFleetNginx(t *testing.T) {
	ng := startNginx(t, "fleet-secret-token")
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, []byte("fleet-secret-token\n"))
	const poll = 2 * time.Second
	caches := t.TempDir()
	nodes, dist1, dist2 := rollout(t, ng.dest(), tablebuild.PublishOptions{}, poll, func(i int) string {
		return fmt.Sprintf(`  path: %s
  cache_dir: %s
  poll_interval: %v
  verify: full
  token_file: %s
  ca_file: %s
  cert_file: %s
  key_file: %s
  headers: {X-Node: node%d}`, ng.url(), filepath.Join(caches, strconv.Itoa(i)), poll, tokenFile, ng.pki.ca, ng.pki.clientCert, ng.pki.clientKey, i+1)
	})
	counts := ng.accessCounts()
	for _, n := range nodes {
		for _, dist := range []string{dist1, dist2} {
			for _, f := range artifacts(t, dist) {
				if c := counts[n.name+" GET /tables/"+f+" 200"]; c != 1 {
					t.Errorf("nginx served %s to %s %d times", f, n.name, c)
				}
			}
		}
		if c := counts[n.name+" GET /tables/MANIFEST.json 304"]; c < 2 {
			t.Errorf("nginx answered %s's polls with 304 %d times", n.name, c)
		}
	}
}

// TestFleetS3: five nodes follow a set in an S3-compatible store
// (gofakes3 on 127.0.0.1), published by lut publish.
func TestFleetS3(t *testing.T) {
	s3 := startS3(t)
	const poll = 2 * time.Second
	caches := t.TempDir()
	popts := tablebuild.PublishOptions{S3Endpoint: s3.Endpoint, S3PathStyle: true}
	_, dist1, dist2 := rollout(t, "s3://tables/prod/", popts, poll, func(i int) string {
		return fmt.Sprintf(`  path: s3://tables/prod/
  cache_dir: %s
  poll_interval: %v
  verify: full
  s3_endpoint: %s
  s3_path_style: true`, filepath.Join(caches, strconv.Itoa(i)), poll, s3.Endpoint)
	})
	for _, dist := range []string{dist1, dist2} {
		for _, f := range artifacts(t, dist) {
			if c := s3.GETs("/tables/prod/" + f); c != 5 {
				t.Errorf("the store served %s %d times to five nodes", f, c)
			}
		}
	}
}
