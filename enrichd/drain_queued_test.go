package enrichd

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestStopTakesQueuedConnections: connections whose clients connected,
// wrote and closed just before the daemon stops, some of them still in
// the listening socket's queue, not yet accepted, when it stops: every
// event they sent is in the file once, and events_out counts them. The
// daemon used to close its listener at once, which reset the queued
// connections and lost their events uncounted.
func TestStopTakesQueuedConnections(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	yml := fmt.Sprintf(`
inputs: [{name: tcp, type: tcp, listen: "127.0.0.1:0", max_connections: 5000}]
tables: {path: %q}
outputs: [{type: file, path: %q}]
drain_read_grace: 1m
`, dir, out)
	must(t, os.WriteFile(filepath.Join(dir, "enrichd.yaml"), []byte(yml), 0o644))
	cfg, err := LoadConfig(filepath.Join(dir, "enrichd.yaml"))
	must(t, err)
	r := startDaemon(t, cfg)
	addr := r.d.Addr("tcp").String()
	conns, per := 1000, 10
	if raceEnabled {
		conns = 400
	}
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(c)
		for j := range per {
			fmt.Fprintf(w, "<13>1 - h app - - - seq=%d\n", i*per+j)
		}
		must(t, w.Flush())
		must(t, c.Close())
	}
	r.stop(t)
	lines := readLines(t, out)
	if len(lines) != conns*per {
		t.Fatalf("%d lines after the stop, want %d", len(lines), conns*per)
	}
	eachNumbered(t, lines, conns*per, func(int, map[string]any, string) {})
	if got := r.d.eventsOut.Load(); got != uint64(len(lines)) {
		t.Errorf("events_out %d, the file holds %d lines", got, len(lines))
	}
}
