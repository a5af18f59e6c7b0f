package engine

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// TestTLSClientField: a rule keyed by tls.client.subject looks up the
// batch's verified client, and Options.TLSClient writes it; a batch
// without a client misses and writes none.
func TestTLSClientField(t *testing.T) {
	dir := t.TempDir()
	compileCSV(t, filepath.Join(dir, "senders.lut"), "subject,site\n"+
		"\"CN=sender-a,O=lutkit test\",paris\n", "subject")
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	rules := []Rule{{Name: "sender", Table: "senders", Fields: []string{"tls.client.subject"}, Target: "sender", Columns: []Rename{{"site", "site"}}}}
	p, err := New(rules, Options{TLSClient: true}, set)
	if err != nil {
		t.Fatal(err)
	}
	w := p.NewWorker(16)
	for _, tc := range []struct {
		client, site string
	}{{"CN=sender-a,O=lutkit test", "paris"}, {"CN=sender-b,O=lutkit test", ""}, {"", ""}} {
		b := &Batch{Format: Syslog}
		if tc.client != "" {
			b.Client = []byte(tc.client)
		}
		b.Add([]byte("<13>1 2026-01-01T00:00:00Z h app - - - hello"), 0)
		line := strings.TrimSuffix(string(w.process(b, nil, time.Now())), "\n")
		m := decode(t, line)
		if got, _ := get(m, "sender.site").(string); got != tc.site {
			t.Errorf("client %q: sender.site %q: %s", tc.client, got, line)
		}
		if got, _ := get(m, "tls.client.subject").(string); got != tc.client {
			t.Errorf("client %q: tls.client.subject %q: %s", tc.client, got, line)
		}
	}
}
