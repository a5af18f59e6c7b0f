package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCommitTracker: offsets become committable only when every batch
// before them is delivered, whatever order the outputs deliver in; a
// failed commit puts them back, still dated from their delivery.
func TestCommitTracker(t *testing.T) {
	tr := newCommitTracker(100)
	batch := func(part int32, offs ...int64) *ackEntry {
		e := tr.open()
		for _, o := range offs {
			e.note(&kgo.Record{Topic: "in", Partition: part, Offset: o})
		}
		return e
	}
	a, b, c := batch(0, 0, 1), batch(1, 0), batch(0, 2, 3)
	if tr.inflight.Load() != 5 {
		t.Fatalf("inflight %d, want 5", tr.inflight.Load())
	}
	c.Delivered()
	b.Delivered()
	if offs, _ := tr.take(); offs != nil {
		t.Fatalf("committable %v before the first batch is delivered", offs)
	}
	if !tr.oldest().IsZero() {
		t.Errorf("oldest delivered %v with nothing committable", tr.oldest())
	}
	a.Delivered()
	offs, n := tr.take()
	want := map[topicPart]int64{{"in", 0}: 3, {"in", 1}: 0}
	if len(offs) != len(want) || n != 5 {
		t.Fatalf("took %v (%d events), want %v (5 events)", offs, n, want)
	}
	for tp, o := range want {
		if offs[tp].offset != o {
			t.Errorf("%s: offset %d, want %d", tp, offs[tp].offset, o)
		}
	}
	since := offs[topicPart{"in", 0}].since
	if old := tr.oldest(); !old.Equal(since) {
		t.Errorf("while committing, oldest %v, want %v", old, since)
	}
	// The commit fails: the offsets wait with the next ones, still dated
	// from their delivery.
	time.Sleep(time.Millisecond)
	d := batch(0, 4)
	d.Delivered()
	tr.restore(offs, n)
	offs, n = tr.take()
	if offs[topicPart{"in", 0}].offset != 4 || n != 6 || !offs[topicPart{"in", 0}].since.Equal(since) {
		t.Errorf("after a failed commit took %v (%d events), want partition 0 at 4 since %v, 6 events", offs, n, since)
	}
	tr.done(n)
	if tr.inflight.Load() != 0 || !tr.oldest().IsZero() || tr.pendingReady() {
		t.Errorf("after the commit: inflight %d, oldest %v, pending %v", tr.inflight.Load(), tr.oldest(), tr.pendingReady())
	}
}
