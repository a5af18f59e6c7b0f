package enrichd

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/seqtally"
)

// TestRELPBetweenDaemons: one enrichd's relp output sends to another's
// relp input, and the receiving daemon is stopped and started again on
// the same port in the middle of a stream of numbered events. The
// fault must hit: the sender's session breaks once and a second one
// opens, and both of the receiver's files hold events. The receiver's
// files hold every event (none lost), duplicates are at most the
// output's window, and the sender counts every event delivered.
func TestRELPBetweenDaemons(t *testing.T) {
	const n, window = 30_000, 128
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relpAddr := ln.Addr().String()
	ln.Close()
	receiver := func(out string) *running {
		cfg, err := ParseConfig(filepath.Join(dir, "b.yaml"), fmt.Appendf(nil, `
inputs:
  - {name: relp, type: relp, listen: %q, format: json}
outputs: [{type: file, path: %q}]
`, relpAddr, out))
		if err != nil {
			t.Fatal(err)
		}
		return startDaemon(t, cfg)
	}
	outs := []string{filepath.Join(dir, "b1.json"), filepath.Join(dir, "b2.json")}
	b := receiver(outs[0])

	cfg, err := ParseConfig(filepath.Join(dir, "a.yaml"), fmt.Appendf(nil, `
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
outputs:
  - {name: relp, type: relp, address: %q, window: %d}
http: {listen: "127.0.0.1:0"}
`, relpAddr, window))
	if err != nil {
		t.Fatal(err)
	}
	a := startDaemon(t, cfg)
	pause := make(chan struct{})
	sent := make(chan error, 1)
	go func() { sent <- sendNumbered(a.d.Addr("tcp").String(), n, n/3, pause) }()
	waitTotal(t, n/4, outs[0])
	b.stop(t)
	close(pause) // the sender goes on while the receiver is away
	time.Sleep(300 * time.Millisecond)
	b = receiver(outs[1])
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	waitTotal(t, n, outs...)
	for end := time.Now().Add(time.Minute); a.d.eventsOut.Load() < n && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	// The fault hit: the sender's session to the stopped receiver broke
	// (once), and it opened a new one to the restarted receiver.
	breaks := metric(t, a.d, `enrichd_output_relp_session_breaks_total{output="relp"}`)
	sessions := metric(t, a.d, `enrichd_output_relp_sessions_total{output="relp"}`)
	a.stop(t)
	b.stop(t)
	if breaks != 1 || sessions != 2 {
		t.Errorf("the sender's sessions broke %v times (want 1, the stop of the receiver) and opened %v (want 2)", breaks, sessions)
	}

	var tally seqtally.Tally
	seqRE := regexp.MustCompile(`seq=(\d+)`)
	total := 0
	for _, f := range outs {
		for _, l := range readLines(t, f) {
			m := seqRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: a line without seq: %.200s", f, l)
			}
			seq, _ := strconv.Atoi(m[1])
			tally.Add(seq)
			total++
		}
	}
	distinct, dups := tally.Counts()
	before, after := len(readLines(t, outs[0])), len(readLines(t, outs[1]))
	t.Logf("%d events: %d lines before the restart, %d after, %d distinct, %d duplicates; %v session breaks, %v sessions",
		n, before, after, distinct, dups, breaks, sessions)
	if before == 0 || after == 0 || before >= n {
		t.Errorf("%d lines before the restart, %d after: the restart did not come mid-stream", before, after)
	}
	if miss := tally.Missing(n); len(miss) > 0 {
		t.Errorf("%d events lost, the first seq %d", len(miss), miss[0])
	}
	if dups > window {
		t.Errorf("%d duplicates, more than the window of %d", dups, window)
	}
	if got := a.d.eventsOut.Load(); got != n {
		t.Errorf("the sender counts %d events delivered, want %d", got, n)
	}
}
