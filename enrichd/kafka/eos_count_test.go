package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestCommittedTo: a transaction whose end failed committed when the
// group's committed offsets reach the offsets past its records on every
// partition it read, each still the input's; one partition short, absent,
// never committed or taken by another member means it did not (or cannot
// be told).
func TestCommittedTo(t *testing.T) {
	offs := func(at ...int64) kadm.OffsetResponses {
		o := kadm.OffsetResponses{}
		for p, a := range at {
			o.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: "in", Partition: int32(p), At: a}})
		}
		return o
	}
	ends := map[topicPart]int64{{"in", 0}: 120, {"in", 1}: 7}
	all := func(topicPart) bool { return true }
	for _, c := range []struct {
		name  string
		offs  kadm.OffsetResponses
		owned func(topicPart) bool
		want  bool
	}{
		{"reached", offs(120, 7), all, true},
		{"past (a later transaction)", offs(130, 9), all, true},
		{"one partition short", offs(120, 6), all, false},
		{"a partition absent", offs(120), all, false},
		{"never committed", offs(-1, -1), all, false},
		{"no answer", nil, all, false},
		{"a partition taken by another member", offs(130, 9), func(tp topicPart) bool { return tp.partition == 0 }, false},
	} {
		if got := committedTo(c.offs, ends, c.owned); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
