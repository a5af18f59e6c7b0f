package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/internal/sample"
	"github.com/lutkit/lutkit/tables"
	"github.com/lutkit/lutkit/tables/tablebuild"
)

// deltaRows is the table's size in TestFleetDelta: LUTKIT_DELTA_ROWS, or
// 100000 (the 2,000,000-row run is in BENCHMARKS.md).
func deltaRows(t *testing.T) int {
	if s := os.Getenv("LUTKIT_DELTA_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			t.Fatalf("LUTKIT_DELTA_ROWS=%q: want a row count of at least 1000", s)
		}
		return n
	}
	return 100000
}

// buildCustomers builds the customers sample of n rows into dist (with
// deltas on), edited by edit, and returns the manifest's digest.
func buildCustomers(t *testing.T, src, dist string, n int, edit func(int) ([]string, bool)) string {
	t.Helper()
	f, err := os.Create(filepath.Join(src, "customers.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sample.WriteCustomersEdited(f, n, 1, edit); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(src, "tables.yaml")
	writeFile(t, cfgPath, []byte("version: 1\ntables:\n  - {name: customers, kind: lut, sources: [customers.csv], key: Customer Id}\n"))
	cfg, err := tablebuild.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablebuild.Build(context.Background(), cfg, dist, tablebuild.Options{Jobs: 1, Delta: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dist, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return fsutil.BytesSHA256(b)
}

// changed edits 100 rows spread over the table: each one's e-mail grows
// by 8 to 14 bytes, so every later record moves in DATA.
func changed(n int) func(int) ([]string, bool) {
	step := n / 100
	return func(i int) ([]string, bool) {
		if i%step != 0 || i/step > 100 {
			return nil, false
		}
		f := sample.NewCustomer(1, i).Fields()
		f[9] = fmt.Sprintf("v2-%0*d.%s", 4+i%7, i, f[9])
		return f, true
	}
}

// fleetNode is the remote-following code of one node, in-process, with
// a cache directory of its own; d is set when the node is a whole enrichd
// daemon.
type fleetNode struct {
	name string
	set  *tables.Set
	d    *node
}

// openDaemonNode starts an enrichd daemon following the store.
func openDaemonNode(t *testing.T, ng *nginx, name, cache, tokenFile string) *fleetNode {
	t.Helper()
	d := startNodeWith(t, name, fmt.Sprintf(`  path: %s
  cache_dir: %s
  poll_interval: 1h
  timeout: 2m
  token_file: %s
  ca_file: %s
  cert_file: %s
  key_file: %s
  headers: {X-Node: %s}`, ng.url(), cache, tokenFile, ng.pki.ca, ng.pki.clientCert, ng.pki.clientKey, name),
		`  - {name: customer, table: customers, field: cust, target: customer, columns: [Email]}`)
	return &fleetNode{name: name, set: d.d.Set(), d: d}
}

func openNode(t *testing.T, ng *nginx, name, cache, tokenFile string) *fleetNode {
	t.Helper()
	set, err := tables.Open(ng.url(), tables.Options{PollInterval: -1, Logger: slog.New(slog.DiscardHandler), Remote: tables.RemoteOptions{
		CacheDir: cache, TokenFile: tokenFile, CAFile: ng.pki.ca, CertFile: ng.pki.clientCert, KeyFile: ng.pki.clientKey,
		Headers: [][2]string{{"X-Node", name}}, Timeout: 2 * time.Minute,
	}})
	if err != nil {
		t.Fatalf("node %s: %v", name, err)
	}
	t.Cleanup(func() { set.Close() })
	return &fleetNode{name: name, set: set}
}

func (n *fleetNode) remote() tables.RemoteStats { return *n.set.Stats().Remote }

// storeBytes sums the body bytes nginx's access log shows it sent to
// node for GETs of path ("" for every path).
func (ng *nginx) storeBytes(t *testing.T, node, path string) (total int64, requests int) {
	t.Helper()
	b, err := os.ReadFile(ng.access)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l) // node method uri status bytes
		if len(f) != 5 || f[0] != node || f[1] != "GET" || (path != "" && f[2] != "/tables/"+path) {
			continue
		}
		n, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			t.Fatalf("access log line %q: %v", l, err)
		}
		total += n
		requests++
	}
	return total, requests
}

// TestFleetDelta: a table of deltaRows customers rows with 100 rows
// changed reaches five nodes that hold the previous version as a delta
// of under 1% of the full artifact's bytes, as nginx's access log counts
// them, and every node then answers every key as a node that downloaded
// the full version does. A node without the base and a node whose base
// is damaged download the full artifact.
func TestFleetDelta(t *testing.T) {
	n := deltaRows(t)
	ng := startNginx(t, "delta-token")
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, []byte("delta-token\n"))
	src, dist := t.TempDir(), filepath.Join(t.TempDir(), "dist")
	start := time.Now()
	v1 := buildCustomers(t, src, dist, n, func(int) ([]string, bool) { return nil, false })
	t.Logf("v1: %d rows built in %v", n, time.Since(start).Round(time.Millisecond))
	publish(t, dist, ng.dest(), tablebuild.PublishOptions{})

	caches := t.TempDir()
	var nodes []*fleetNode
	// node1 is an enrichd daemon (its metrics are checked), the others
	// the tables' remote-following code in-process.
	nodes = append(nodes, openDaemonNode(t, ng, "node1", filepath.Join(caches, "0"), tokenFile))
	for i := 1; i < 6; i++ {
		nodes = append(nodes, openNode(t, ng, fmt.Sprintf("node%d", i+1), filepath.Join(caches, strconv.Itoa(i)), tokenFile))
	}
	for _, nd := range nodes {
		if v := nd.remote().Version; v != v1 {
			t.Fatalf("node %s serves %q, want v1 %s", nd.name, v, v1)
		}
	}
	m1, err := tables.ReadManifest(filepath.Join(dist, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	base := m1.Table("customers")

	start = time.Now()
	v2 := buildCustomers(t, src, dist, n, changed(n))
	m2, err := tables.ReadManifest(filepath.Join(dist, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	full := m2.Table("customers")
	if full.Delta == nil || full.Delta.BaseSHA256 != base.SHA256 || full.Delta.Chain != 1 {
		t.Fatalf("v2's manifest entry has no delta from v1: %+v", full.Delta)
	}
	t.Logf("v2: built with its delta in %v: artifact %d bytes, delta %d bytes (%.4f%%)", time.Since(start).Round(time.Millisecond),
		full.Size, full.Delta.Size, 100*float64(full.Delta.Size)/float64(full.Size))

	// node6's base is damaged (one byte of a record, size unchanged): the
	// delta applies, the result's digest is not the manifest's.
	damaged := filepath.Join(caches, "5", base.SHA256+".lut")
	b, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x20
	writeFile(t, damaged, b)

	publish(t, dist, ng.dest(), tablebuild.PublishOptions{})
	before := map[string]uint64{}
	for _, nd := range nodes {
		before[nd.name] = nd.remote().Bytes
		if err := nd.set.Reload(); err != nil {
			t.Fatalf("node %s: %v", nd.name, err)
		}
		if v := nd.remote().Version; v != v2 {
			t.Fatalf("node %s serves %q after the check, want v2 %s", nd.name, v, v2)
		}
	}
	// A seventh node starts after v2: it never held v1.
	fresh := openNode(t, ng, "node7", filepath.Join(caches, "6"), tokenFile)
	if v := fresh.remote().Version; v != v2 {
		t.Fatalf("node7 serves %q, want v2 %s", v, v2)
	}

	// What the store sent, from its access log.
	for _, nd := range nodes[:5] {
		got, reqs := ng.storeBytes(t, nd.name, full.Delta.File)
		fullBytes, fullReqs := ng.storeBytes(t, nd.name, full.File)
		all, _ := ng.storeBytes(t, nd.name, "")
		// Everything sent since v1 was served (the check below shows the
		// node's counter and the log agree): v2's manifest and delta.
		update := all - int64(before[nd.name])
		t.Logf("node %s: the store sent the delta %d times, %d bytes; the full v2 artifact %d times; v2 cost %d bytes in all",
			nd.name, reqs, got, fullReqs, update)
		if reqs != 1 || got != full.Delta.Size || fullReqs != 0 || fullBytes != 0 {
			t.Errorf("node %s: delta GETs %d (%d bytes, want %d), full artifact GETs %d", nd.name, reqs, got, full.Delta.Size, fullReqs)
		}
		if update*100 >= full.Size {
			t.Errorf("node %s: the update cost %d bytes, not under 1%% of the %d-byte artifact", nd.name, update, full.Size)
		}
		r := nd.remote()
		if r.DeltasApplied != 1 || len(nonZero(r.DeltaFallbacks)) != 0 {
			t.Errorf("node %s: %d deltas applied, fallbacks %v", nd.name, r.DeltasApplied, r.DeltaFallbacks)
		}
		// Our byte counter agrees with the store's log.
		if uint64(all) != r.Bytes {
			t.Errorf("node %s: counted %d bytes received, nginx logged %d sent", nd.name, r.Bytes, all)
		}
		if nd.d != nil {
			metrics := nd.d.get(t, "/metrics")
			for name, want := range map[string]float64{
				"enrichd_tables_remote_bytes_total":                                  float64(all),
				"enrichd_tables_remote_delta_applied_total":                          1,
				`enrichd_tables_remote_delta_fallbacks_total{reason="base_missing"}`: 0,
				`enrichd_tables_remote_delta_fallbacks_total{reason="mismatch"}`:     0,
			} {
				if got, ok := metricValue(metrics, name); !ok || got != want {
					t.Errorf("node %s: %s is %v (found %v), want %v:\n%s", nd.name, name, got, ok, want, grepLines(metrics, "enrichd_tables_remote"))
				}
			}
		}
	}
	// node6 (damaged base) and node7 (no base): the full artifact.
	for _, c := range []struct {
		nd     *fleetNode
		reason string
	}{{nodes[5], tables.DeltaMismatch}, {fresh, tables.DeltaBaseMissing}} {
		_, fullReqs := ng.storeBytes(t, c.nd.name, full.File)
		r := c.nd.remote()
		if fullReqs != 1 || r.DeltasApplied != 0 || r.DeltaFallbacks[c.reason] != 1 || len(nonZero(r.DeltaFallbacks)) != 1 {
			t.Errorf("node %s: full artifact GETs %d, deltas applied %d, fallbacks %v (want one %s)", c.nd.name, fullReqs, r.DeltasApplied, r.DeltaFallbacks, c.reason)
		}
	}

	// Every node answers every key of v2 as node7, which downloaded the
	// full version, does.
	keys := allKeys(n)
	ref := fresh.set.Acquire()
	defer ref.Release()
	rt := ref.LUT("customers")
	if rt == nil || rt.Rows() != n {
		t.Fatalf("node7: customers %v", rt)
	}
	for _, nd := range nodes {
		sn := nd.set.Acquire()
		tb := sn.LUT("customers")
		if tb == nil || tb.Rows() != n {
			sn.Release()
			t.Fatalf("node %s: customers %v", nd.name, tb)
		}
		diff := 0
		for _, k := range keys {
			want, wok := rt.Lookup(k)
			got, gok := tb.Lookup(k)
			if wok != gok || !bytes.Equal(want.Values(), got.Values()) {
				diff++
			}
		}
		sn.Release()
		if diff != 0 {
			t.Errorf("node %s: %d of %d keys answer differently from node7", nd.name, diff, len(keys))
		}
	}
	// The changed rows are v2's.
	edit := changed(n)
	for i := 1; i <= n; i++ {
		f, ok := edit(i)
		if !ok {
			continue
		}
		v, found := rt.Lookup([]byte(f[1]))
		if !found || !bytes.Equal(v.Col(9), []byte(f[9])) {
			t.Fatalf("row %d: node7 answers %q, want e-mail %q", i, v.Col(9), f[9])
		}
	}
}

// allKeys returns the Customer Id of rows 1..n and a key of no row.
func allKeys(n int) [][]byte {
	keys := make([][]byte, 0, n+1)
	for i := 1; i <= n; i++ {
		keys = append(keys, []byte(sample.NewCustomer(1, i).ID))
	}
	return append(keys, []byte("no such customer"))
}

func nonZero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// metricValue finds the sample name (with its labels) in a Prometheus
// text exposition.
func metricValue(metrics, name string) (float64, bool) {
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}
