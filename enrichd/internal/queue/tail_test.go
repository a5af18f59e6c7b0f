package queue

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/corrupt"
)

// TestZeroTail: the last segment of a crashed run (no Close) ends in
// zeros past its last record, where records were written that a crash of
// the system lost before they were on the disk: Open cuts them off,
// reports them torn (Zeros: file, offset, the bytes cut) and counts them
// as torn, once; every whole record is replayed. The end mark alone
// after the last record (a crash of enrichd only) is no loss: nothing
// is reported.
func TestZeroTail(t *testing.T) {
	for _, zeros := range []int64{0, 3000} {
		name := "end mark only"
		if zeros > 0 {
			name = "zeros past the end mark"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 1<<20, nil)
			appendN(t, s, 0, 20)
			must(t, s.closeFiles()) // a crash: the end mark stays
			segs := segFiles(t, dir)
			last := segs[len(segs)-1]
			fi, err := os.Stat(last)
			must(t, err)
			end := fi.Size() - recHeaderSize // after the last record
			must(t, os.Truncate(last, fi.Size()+zeros))

			var dmg []Damage
			s = open(t, dir, 1<<20, &dmg)
			if fi, err := os.Stat(last); err != nil || fi.Size() != end {
				t.Fatalf("the segment after Open: %v; want it cut at %d", fi, end)
			}
			if got := readAll(t, s, true); len(got) != 20 {
				t.Fatalf("replayed %d records, want 20", len(got))
			}
			st := s.Stats()
			if zeros == 0 {
				if len(dmg) != 0 || st.Torn != 0 || st.Damaged != 0 {
					t.Fatalf("the end mark reported: damage %+v, stats %+v", dmg, st)
				}
				must(t, s.Close())
				return
			}
			if len(dmg) != 1 || !dmg[0].Torn || !dmg[0].Zeros || dmg[0].Off != end || dmg[0].Len != recHeaderSize+zeros ||
				!errors.Is(dmg[0].Err, corrupt.ErrCorrupt) || !strings.Contains(dmg[0].Err.Error(), "zero bytes") {
				t.Fatalf("damage %+v, want the %d zero bytes at %d reported torn", dmg, recHeaderSize+zeros, end)
			}
			if st.Torn != 1 || st.Damaged != 0 {
				t.Errorf("stats %+v, want one torn", st)
			}
			t.Logf("%v", dmg[0].Err)
			must(t, s.closeFiles())
			dmg = nil
			s = open(t, dir, 1<<20, &dmg)
			if st := s.Stats(); len(dmg) != 0 || st.Torn != 0 {
				t.Errorf("at the next start: damage %+v, stats %+v; want the zeros reported once", dmg, st)
			}
			must(t, s.Close())
		})
	}
}
