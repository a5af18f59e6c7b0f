package engine

import (
	"bytes"
	"testing"
	"time"
)

// checkFused encodes each event of the batch w has just processed both
// by its fused program and by the encoding program, and fails when they
// differ. It returns how many events had a fused program.
func checkFused(t *testing.T, w *Worker, n int, what string) int {
	t.Helper()
	fused := 0
	for i := range n {
		e := &w.evs[i]
		want := w.encodeProgram(i, e, nil)
		if e.kind == JSON || !w.p.fused.ok {
			continue
		}
		syslog := e.kind == Syslog && e.ev.Format != 0
		fp := w.p.fuseProgram(w.presence(i, e, syslog, syslog && isJSONUint(e.ev.ProcID)))
		got, ok := w.encodeFused(fp, i, e, nil)
		if !ok {
			continue
		}
		fused++
		if !bytes.Equal(got, want) {
			t.Fatalf("%s, event %d: fused program wrote\n%s\nthe encoding program\n%s", what, i, got, want)
		}
	}
	return fused
}

// TestFusedMatchesProgram: every golden event under every golden rule set
// encodes to the same bytes by its fused program as by the encoding
// program, with rows, defaults, MMDB fields, header fields present and
// absent.
func TestFusedMatchesProgram(t *testing.T) {
	set := openGoldenSet(t)
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	fused := 0
	for ci, gc := range goldenConfigs {
		p, err := New(gc.rules, gc.opts, set)
		if err != nil {
			t.Fatalf("config %d: %v", ci, err)
		}
		w := p.NewWorker(64)
		for _, f := range []Format{Syslog, Raw} {
			for _, client := range [][]byte{nil, []byte("CN=x")} {
				b := &Batch{Format: f, Client: client}
				for _, ev := range goldenEvents[f] {
					b.Add([]byte(ev), 0)
				}
				n := len(b.Msgs)
				w.process(b, nil, now)
				fused += checkFused(t, w, n, "config "+string(rune('0'+ci)))
			}
		}
	}
	if fused == 0 {
		t.Fatal("no event had a fused program")
	}
}
