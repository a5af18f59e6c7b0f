package fleet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
	"github.com/lutkit/lutkit/tables/tablebuild"
)

// TestFleetReloadDuringDownload: a configuration reload that changes the
// tables section opens a new set on the same cache_dir while the old set
// is downloading a version from nginx (its artifacts sent at 30 KB/s).
// The new set does not download into the old one's files: the reload
// waits for the download, the node serves the version, and nginx sent
// each artifact to the node once.
func TestFleetReloadDuringDownload(t *testing.T) {
	dist1, _ := buildVersion(t, 1)
	dist2, v2 := buildVersion(t, 2)
	ng := startNginx(t, "fleet-secret-token", artifacts(t, dist2)...)
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, []byte("fleet-secret-token\n"))
	publish(t, dist1, ng.dest(), tablebuild.PublishOptions{})
	cache := t.TempDir()
	tablesYAML := func(poll time.Duration) string {
		return fmt.Sprintf(`  path: %s
  cache_dir: %s
  poll_interval: %v
  timeout: 2m
  token_file: %s
  ca_file: %s
  cert_file: %s
  key_file: %s
  headers: {X-Node: node1}`, ng.url(), cache, poll, tokenFile, ng.pki.ca, ng.pki.clientCert, ng.pki.clientKey)
	}
	const rules = `  - {name: customer, table: customers, field: cust, target: customer, columns: ["Customer Id"]}`
	n := startNodeWith(t, "node1", tablesYAML(300*time.Millisecond), rules)
	old := n.d.Set()

	publish(t, dist2, ng.dest(), tablebuild.PublishOptions{})
	deadline := time.Now().Add(30 * time.Second)
	for !downloading(t, cache) {
		if time.Now().After(deadline) {
			t.Fatal("the node never began downloading v2")
		}
		time.Sleep(20 * time.Millisecond)
	}

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
`, tablesYAML(400*time.Millisecond), rules, n.out)
	start := time.Now()
	err := n.d.Reload(func() (*enrichd.Config, error) {
		return enrichd.ParseConfig(filepath.Join(t.TempDir(), "enrichd.yaml"), []byte(yml))
	})
	if err != nil {
		t.Fatalf("the reload during a download: %v", err)
	}
	t.Logf("the reload took %v", time.Since(start).Round(time.Millisecond))
	if n.d.Set() == old {
		t.Fatal("the reload did not switch to a new table set")
	}
	for n.version() != v2 {
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatalf("the node serves %q, want v2 %s", n.version(), v2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	counts := ng.accessCounts()
	for _, f := range artifacts(t, dist2) {
		// A second download into the same file resumes it: a 206.
		if c, r := counts["node1 GET /tables/"+f+" 200"], counts["node1 GET /tables/"+f+" 206"]; c != 1 || r != 0 {
			t.Errorf("nginx sent %s to the node %d times whole and %d times in part, want once whole", f, c, r)
		}
	}
	m, err := tables.ReadManifest(filepath.Join(dist2, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range m.Tables {
		sum, _, err := fsutil.FileSHA256(filepath.Join(cache, tb.SHA256+tb.Kind.Ext()))
		if err != nil || sum != tb.SHA256 {
			t.Errorf("cached artifact of %s: sha256 %s, %v", tb.Name, sum, err)
		}
	}
}

// downloading reports whether the cache's .partial/ holds a download
// under way (a file with bytes).
func downloading(t *testing.T, cache string) bool {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(cache, ".partial"))
	if err != nil {
		return false
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Size() > 0 {
			return true
		}
	}
	return false
}
