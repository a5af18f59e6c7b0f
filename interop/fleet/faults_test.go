package fleet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
	"github.com/lutkit/lutkit/tables/tablebuild"
)

// TestFleetFaultsNginx: a node pulling from nginx meets every fault a
// store can show while events stream into it. Each bad version is
// rejected whole and counted by reason, the node keeps serving v1, and no
// event is lost; it then follows a good v2. (A stalled server and an
// advertised 10 GB artifact need a server that misbehaves on purpose:
// tables.TestRemoteFaults covers them.)
func TestFleetFaultsNginx(t *testing.T) {
	dist1, v1 := buildVersion(t, 1)
	dist2, v2 := buildVersion(t, 2)
	dist3, v3 := buildVersion(t, 3)
	ng := startNginx(t, "fault-secret-token", artifacts(t, dist3)...)
	www := filepath.Join(ng.root, "tables")
	tokenFile := filepath.Join(t.TempDir(), "token")
	setToken := func(s string) { writeFile(t, tokenFile, []byte(s)) }
	setToken("fault-secret-token\n")
	publish(t, dist1, ng.dest(), tablebuild.PublishOptions{})
	const poll = 300 * time.Millisecond
	cache := t.TempDir()
	nodeTables := fmt.Sprintf(`  path: %s
  cache_dir: %s
  poll_interval: %v
  retries: 1
  timeout: 10s
  token_file: %s
  ca_file: %s
  cert_file: %s
  key_file: %s
  headers: {X-Node: faulty}`, ng.url(), cache, poll, tokenFile, ng.pki.ca, ng.pki.clientCert, ng.pki.clientKey)
	n := startNode(t, "faulty", nodeTables)
	n.startSending(t)

	m2, err := tables.ReadManifest(filepath.Join(dist2, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	manifest2, _ := os.ReadFile(filepath.Join(dist2, tables.ManifestName))
	// putManifest replaces the served manifest, dated later than the one
	// it replaces (nginx's ETag and Last-Modified count seconds).
	putManifest := func(b []byte) {
		p := filepath.Join(www, tables.ManifestName)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		mtime := fi.ModTime().Add(time.Second)
		tmp := p + ".tmp"
		writeFile(t, tmp, b)
		if err := os.Chtimes(tmp, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	copyArtifact := func(i int, change func([]byte) []byte) {
		b, err := os.ReadFile(filepath.Join(dist2, m2.Tables[i].File))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(www, m2.Tables[i].File), change(b))
	}
	keep := func(b []byte) []byte { return b }
	removeV2 := func() {
		for _, a := range m2.Tables {
			os.Remove(filepath.Join(www, a.File))
		}
	}
	restoreV1 := func() {
		removeV2()
		publish(t, dist1, ng.dest(), tablebuild.PublishOptions{})
	}

	faults := []struct {
		name, reason   string
		apply, restore func()
	}{
		{"wrong token", tables.ReasonForbidden, func() { setToken("not-the-token") }, func() { setToken("fault-secret-token") }},
		{"missing token", tables.ReasonUnauthorized, func() { setToken("") }, func() { setToken("fault-secret-token") }},
		{"manifest not JSON", tables.ReasonManifest, func() { putManifest([]byte("<html><body>502 Bad Gateway</body></html>\n")) }, restoreV1},
		{"manifest naming a missing artifact", tables.ReasonNotFound, func() {
			copyArtifact(0, keep)
			putManifest(manifest2)
		}, restoreV1},
		{"truncated artifact", tables.ReasonSize, func() {
			copyArtifact(0, keep)
			copyArtifact(1, func(b []byte) []byte { return b[:len(b)-100] })
			putManifest(manifest2)
		}, restoreV1},
		{"wrong digest", tables.ReasonDigest, func() {
			copyArtifact(0, keep)
			copyArtifact(1, func(b []byte) []byte { b[len(b)/2] ^= 0x55; return b })
			putManifest(manifest2)
		}, restoreV1},
		{"store down", tables.ReasonUnreachable, ng.stop, ng.start},
	}
	for _, f := range faults {
		before := n.remote()
		logBefore := ng.accessCounts()
		f.apply()
		start := time.Now()
		for n.remote().Failures[f.reason] == before.Failures[f.reason] {
			if time.Since(start) > 60*time.Second {
				t.Fatalf("%s: no %s failure counted: %+v", f.name, f.reason, n.remote())
			}
			time.Sleep(20 * time.Millisecond)
		}
		// A few more checks under the fault.
		checks := n.remote().Checks
		for n.remote().Checks < checks+3 {
			if time.Since(start) > 60*time.Second {
				t.Fatalf("%s: the node stopped checking", f.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		r := n.remote()
		if n.version() != v1 || !r.Stale {
			t.Fatalf("%s: the node serves %s (v1 %s), stale %v", f.name, n.version(), v1, r.Stale)
		}
		if ready := n.get(t, "/readyz"); !strings.Contains(ready, "tables stale") {
			t.Errorf("%s: /readyz does not say stale: %q", f.name, ready)
		}
		t.Logf("%s: rejected (%s): %s", f.name, f.reason, r.StaleReason)
		f.restore()
		for n.remote().Stale {
			if time.Since(start) > 60*time.Second {
				t.Fatalf("%s: the node did not recover: %+v", f.name, n.remote())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n.version() != v1 {
			t.Fatalf("%s: after recovery the node serves %s", f.name, n.version())
		}
		if f.reason == tables.ReasonForbidden || f.reason == tables.ReasonUnauthorized {
			// No retry storm: one request per check. Counted once the
			// node recovered: no refused check is in flight then.
			status := map[string]string{tables.ReasonForbidden: "403", tables.ReasonUnauthorized: "401"}[f.reason]
			key := "faulty GET /tables/MANIFEST.json " + status
			reqs := ng.accessCounts()[key] - logBefore[key]
			after := n.remote()
			checks := after.Checks - before.Checks
			if failures := after.Failures[f.reason] - before.Failures[f.reason]; uint64(reqs) != failures || uint64(reqs) > checks {
				t.Errorf("%s: %d requests answered %s, %d failures counted, %d checks", f.name, reqs, status, failures, checks)
			}
		}
	}
	// v1's two artifacts, and v2's first one, sound, fetched once for
	// the first fault that offered it and kept in the cache since.
	if got := n.remote().Downloads; got != 3 {
		t.Errorf("%d artifacts downloaded and verified through the faults, want 3", got)
	}

	// The store down at start: a restarted node serves its cache and
	// says it is stale, until the store is back.
	n.stopSending(t)
	before := n.checkOutput(t)
	n.shutdown(t)
	ng.stop()
	n2 := startNode(t, "restarted", nodeTables)
	n2.startSending(t)
	if n2.version() != v1 || !n2.remote().Stale {
		t.Fatalf("restart with the store down: version %s, %+v", n2.version(), n2.remote())
	}
	if ready := n2.get(t, "/readyz"); !strings.Contains(ready, "ready") || !strings.Contains(ready, "tables stale") {
		t.Errorf("restart with the store down: /readyz %q", ready)
	}
	if m := n2.get(t, "/metrics"); !strings.Contains(m, "enrichd_tables_stale 1") || !strings.Contains(m, "enrichd_tables_last_success_age_seconds ") {
		t.Errorf("restart with the store down: metrics\n%s", grepLines(m, "enrichd_tables"))
	}
	ng.start()
	publish(t, dist2, ng.dest(), tablebuild.PublishOptions{})
	waitAll(t, []*node{n2}, 60*time.Second, "serves v2", func(n *node) bool { return n.version() == v2 })

	// The store down in the middle of a download (nginx sends v3's
	// artifacts at 30 KB/s): the node keeps v2, and resumes the download
	// with a range request once the store is back.
	logBefore := ng.accessCounts()
	publish(t, dist3, ng.dest(), tablebuild.PublishOptions{})
	partial := filepath.Join(cache, ".partial")
	for start := time.Now(); ; {
		if ents, _ := os.ReadDir(partial); len(ents) > 0 {
			if fi, err := ents[0].Info(); err == nil && fi.Size() > 0 {
				break
			}
		}
		if time.Since(start) > 60*time.Second {
			t.Fatal("no partial download appeared")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ng.stop()
	down := n2.remote().Failures[tables.ReasonUnreachable]
	waitAll(t, []*node{n2}, 60*time.Second, "counts the store down", func(n *node) bool {
		return n.remote().Failures[tables.ReasonUnreachable] > down+1
	})
	if n2.version() != v2 {
		t.Fatalf("store down mid-download: the node serves %s", n2.version())
	}
	ng.start()
	waitAll(t, []*node{n2}, 60*time.Second, "serves v3", func(n *node) bool { return n.version() == v3 })
	counts := ng.accessCounts()
	resumed := 0
	for _, f := range artifacts(t, dist3) {
		resumed += counts["faulty GET /tables/"+f+" 206"] - logBefore["faulty GET /tables/"+f+" 206"]
	}
	if resumed == 0 {
		t.Errorf("no download resumed with a range request (206)")
	}
	time.Sleep(poll)
	n2.stopSending(t)
	after := n2.checkOutput(t)
	t.Logf("events by version: before the restart %v, after %v", before, after)
	if after["2"] == 0 || after["3"] == 0 || n2.remote().Stale {
		t.Errorf("after the store came back: %v, %+v", after, n2.remote())
	}
}
