package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestCommittedTo: a transaction whose end failed committed when the
// group's committed offsets reach the offsets past its records on every
// partition it read; one partition short, absent or never committed
// means it did not.
func TestCommittedTo(t *testing.T) {
	offs := func(at ...int64) kadm.OffsetResponses {
		o := kadm.OffsetResponses{}
		for p, a := range at {
			o.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: "in", Partition: int32(p), At: a}})
		}
		return o
	}
	ends := map[topicPart]int64{{"in", 0}: 120, {"in", 1}: 7}
	for _, c := range []struct {
		name string
		offs kadm.OffsetResponses
		want bool
	}{
		{"reached", offs(120, 7), true},
		{"past (a later transaction)", offs(130, 9), true},
		{"one partition short", offs(120, 6), false},
		{"a partition absent", offs(120), false},
		{"never committed", offs(-1, -1), false},
		{"no answer", nil, false},
	} {
		if got := committedTo(c.offs, ends); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
