package enrichd

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDrainCutMessage: at shutdown, connections that stay open are read
// until drain_read_grace, which cuts what they are sending. A syslog line
// cut there is delivered as far as it was read, as a JSON or raw line is; an octet-counted frame
// cut there cannot be, and is counted in enrichd_frame_errors_total. The
// file holds what the counters say: events_in and events_out are its
// lines. The syslog line used to be dropped, uncounted.
func TestDrainCutMessage(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
  - {name: json, type: tcp, listen: "127.0.0.1:0", format: json}
  - {name: raw, type: tcp, listen: "127.0.0.1:0", format: raw}
tables: {path: %q}
outputs: [{type: file, path: %q}]
drain_read_grace: 1s
`, dir, out)
	must(t, os.WriteFile(filepath.Join(dir, "enrichd.yaml"), []byte(yml), 0o644))
	cfg, err := LoadConfig(filepath.Join(dir, "enrichd.yaml"))
	must(t, err)
	r := startDaemon(t, cfg)

	// Each connection sends a whole message and the start of another in
	// one write, and stays open: once the whole one is in the file, the
	// daemon has read the start of the next.
	line := dialTCP(t, r.d, "tcp")
	defer line.Close()
	send(t, line, []byte("<13>1 - h app - - - seq=0\n<13>1 - h app - - - seq=1 cut"))
	octet := dialTCP(t, r.d, "tcp")
	defer octet.Close()
	frame := "<13>1 - h app - - - seq=2"
	send(t, octet, []byte(fmt.Sprintf("%d %s60 <13>1 - h app - - - seq=3 cut", len(frame), frame)))
	js := dialTCP(t, r.d, "json")
	defer js.Close()
	send(t, js, []byte("{\"seq\":4}\n{\"seq\":5,\"cut\":tr"))
	raw := dialTCP(t, r.d, "raw")
	defer raw.Close()
	send(t, raw, []byte("seq=6\nseq=7 cut"))
	waitLines(t, out, 4, time.Minute)

	r.stop(t)
	lines := readLines(t, out)
	got := bySeq(t, lines, "5")
	if len(lines) != 7 || got["0"] == nil || got["2"] == nil || got["4"] == nil || got["6"] == nil {
		t.Errorf("the file holds %d lines, want the 4 whole messages and the 3 cut lines:\n%s", len(lines), lines)
	}
	if m := got["1"]; m == nil || get(m, "message") != "seq=1 cut" || hasTag(m, "_truncated") || hasTag(m, "_malformed") {
		t.Errorf("the syslog line cut by the drain: %v, want it delivered as sent, untagged", m)
	}
	if m := got["5"]; m == nil || get(m, "message") != `{"seq":5,"cut":tr` || !hasTag(m, "_jsonparsefailure") {
		t.Errorf("the JSON line cut by the drain: %v, want it delivered as sent", m)
	}
	if m := got["7"]; m == nil || get(m, "message") != "seq=7 cut" {
		t.Errorf("the raw line cut by the drain: %v, want it delivered as sent", m)
	}
	if got["3"] != nil {
		t.Errorf("the cut octet-counted frame was delivered: %v", got["3"])
	}

	want := map[string][2]uint64{"tcp": {3, 1}, "json": {2, 0}, "raw": {2, 0}}
	var in uint64
	r.d.inMu.RLock()
	for _, x := range r.d.inputs {
		s := x.Stats()
		in += s.Events.Load()
		if w := want[s.Name]; s.Events.Load() != w[0] || s.FrameErrors.Load() != w[1] || s.Truncated.Load() != 0 {
			t.Errorf("input %s: events_in %d, frame_errors %d, truncated %d; want %d, %d, 0",
				s.Name, s.Events.Load(), s.FrameErrors.Load(), s.Truncated.Load(), w[0], w[1])
		}
	}
	r.d.inMu.RUnlock()
	if outN := r.d.eventsOut.Load(); in != uint64(len(lines)) || outN != uint64(len(lines)) {
		t.Errorf("events_in %d, events_out %d, but the file holds %d lines", in, outN, len(lines))
	}
}
