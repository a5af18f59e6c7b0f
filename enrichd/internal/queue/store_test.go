package queue

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/corrupt"
)

func payload(i int) []byte {
	return []byte(strings.Repeat(fmt.Sprintf("{\"seq\":%d}\n", i), 1+i%7))
}

func open(t *testing.T, dir string, maxBytes int64, damage *[]Damage) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, MaxBytes: maxBytes, SegmentBytes: 4 << 10, OnDamage: func(_ string, d Damage) {
		if damage != nil {
			*damage = append(*damage, d)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readAll reads every record, checking each is the payload of its seq,
// and returns the seqs (from the payload's first line).
func readAll(t *testing.T, s *Store, done bool) []int {
	t.Helper()
	var seqs []int
	var buf []byte
	for {
		r, err := s.Next(buf)
		if errors.Is(err, ErrEmpty) {
			return seqs
		}
		if err != nil {
			t.Fatal(err)
		}
		var seq int
		if _, err := fmt.Sscanf(string(r.Data), "{\"seq\":%d}", &seq); err != nil {
			t.Fatalf("record %q: %v", r.Data, err)
		}
		if string(r.Data) != string(payload(seq)) || r.Events != 1+seq%7 {
			t.Fatalf("record of seq %d: %d events, %q", seq, r.Events, r.Data)
		}
		seqs = append(seqs, seq)
		if done {
			s.Done(r.ID)
		}
		buf = r.Data
	}
}

func appendN(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := s.Append(payload(i), 1+i%7); err != nil {
			t.Fatal(err)
		}
	}
}

func segFiles(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReplayAndRemove: records not delivered are replayed after a
// reopen, in order; delivered ones are not, and their segments are
// removed.
func TestReplayAndRemove(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 500)
	if got := readAll(t, s, false); len(got) != 500 {
		t.Fatalf("read %d records, want 500", len(got))
	}
	if n := len(segFiles(t, dir)); n < 5 {
		t.Fatalf("%d segments, want many of 4 KiB", n)
	}
	must(t, s.Close())

	s = open(t, dir, 1<<20, nil)
	got := readAll(t, s, true)
	if len(got) != 500 {
		t.Fatalf("replayed %d records, want 500", len(got))
	}
	for i, seq := range got {
		if seq != i {
			t.Fatalf("record %d is seq %d", i, seq)
		}
	}
	appendN(t, s, 500, 600)
	if got := readAll(t, s, true); len(got) != 100 || got[0] != 500 {
		t.Fatalf("after the replay: %d records, first %v", len(got), got)
	}
	if n := len(segFiles(t, dir)); n > 2 {
		t.Errorf("%d segments left once every record is delivered", n)
	}
	if st := s.Stats(); st.Delivered != st.Read || st.Read == 0 {
		t.Errorf("stats %+v", st)
	}
	must(t, s.Close())
	s = open(t, dir, 1<<20, nil)
	if got := readAll(t, s, true); len(got) != 0 {
		t.Errorf("delivered records replayed: %d", len(got))
	}
	must(t, s.Close())
}

// TestDeliveredOutOfOrder: the queue forgets records in order however
// they are reported; a reopen replays from the first not reported.
func TestDeliveredOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 100)
	var ids []uint64
	var buf []byte
	for {
		r, err := s.Next(buf)
		if err != nil {
			break
		}
		ids = append(ids, r.ID)
	}
	for i := len(ids) - 1; i >= 50; i-- {
		s.Done(ids[i])
	}
	for i := range 40 {
		s.Done(ids[i])
	}
	must(t, s.Close())
	s = open(t, dir, 1<<20, nil)
	got := readAll(t, s, false)
	if len(got) == 0 || got[0] > 40 || got[len(got)-1] != 99 {
		t.Fatalf("replayed %v", got)
	}
	must(t, s.Close())
}

// TestFlippedBytes: a byte flipped in a payload, then one in a header:
// each damaged record is reported (marked corrupt) and skipped, every
// other record is replayed.
func TestFlippedBytes(t *testing.T) {
	for _, where := range []string{"payload", "header", "segment header"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 1<<20, nil)
			appendN(t, s, 0, 200)
			must(t, s.Close())
			segs := segFiles(t, dir)
			b, err := os.ReadFile(segs[1])
			if err != nil {
				t.Fatal(err)
			}
			// The third record of the second segment.
			off := segHeaderSize
			for range 2 {
				rh, _ := parseRecHeader(b[off:], 2)
				off += recHeaderSize + int(rh.length)
			}
			switch where {
			case "payload":
				b[off+recHeaderSize+3] ^= 0x20
			case "header":
				b[off+5] ^= 0x01 // the length
			default:
				b[2] ^= 0x01
			}
			must(t, os.WriteFile(segs[1], b, 0o640))
			var dmg []Damage
			s = open(t, dir, 1<<20, &dmg)
			got := readAll(t, s, true)
			want := 199
			if where == "segment header" {
				want = 200
			}
			if len(got) != want || len(dmg) != 1 || !errors.Is(dmg[0].Err, corrupt.ErrCorrupt) || dmg[0].Torn {
				t.Fatalf("%d records replayed (want %d), damage %+v", len(got), want, dmg)
			}
			if where != "segment header" && (dmg[0].Off != int64(off) || s.Stats().Damaged != 1) {
				t.Errorf("damage at %d, want %d; stats %+v", dmg[0].Off, off, s.Stats())
			}
			t.Logf("%s: %v", where, dmg[0].Err)
			must(t, s.Close())
		})
	}
}

// TestTornTail: the last segment before a restart cut inside a record
// (a crash during the write): reported as torn, not damage, and every
// whole record replayed.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 20)
	must(t, s.Close())
	segs := segFiles(t, dir)
	last := segs[len(segs)-1]
	fi, _ := os.Stat(last)
	must(t, os.Truncate(last, fi.Size()-5))
	var dmg []Damage
	s = open(t, dir, 1<<20, &dmg)
	got := readAll(t, s, true)
	if len(got) != 19 || len(dmg) != 1 || !dmg[0].Torn || s.Stats().Torn != 1 || s.Stats().Damaged != 0 {
		t.Fatalf("%d records, damage %+v, stats %+v", len(got), dmg, s.Stats())
	}
	must(t, s.Close())
}

// TestFull: an Append over MaxBytes is refused with ErrFull until
// delivered segments are removed.
func TestFull(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 32<<10, nil)
	n := 0
	for ; ; n++ {
		err := s.Append(payload(n), 1+n%7)
		if errors.Is(err, ErrFull) {
			break
		}
		must(t, err)
	}
	if !s.Stats().Full || s.Stats().Bytes > 32<<10 {
		t.Fatalf("stats %+v", s.Stats())
	}
	if got := readAll(t, s, true); len(got) != n {
		t.Fatalf("read %d, want %d", len(got), n)
	}
	select {
	case <-s.Freed():
	default:
		t.Fatal("Freed not signalled")
	}
	must(t, s.Append(payload(n), 1+n%7))
	must(t, s.Close())
}

// TestFullSmallQueue: a MaxBytes under the smallest default segment
// size (1 MiB), with the default SegmentBytes: once full, delivering
// every record frees room, round after round.
func TestFullSmallQueue(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MaxBytes: 768 << 10})
	must(t, err)
	n, from := 0, 0 // the records appended, the first not read
	for round := range 3 {
		for ; ; n++ {
			err := s.Append(payload(n), 1+n%7)
			if errors.Is(err, ErrFull) {
				break
			}
			must(t, err)
		}
		if n-from < 1000 {
			t.Fatalf("round %d: full after %d records", round, n-from)
		}
		if got := readAll(t, s, true); len(got) != n-from || got[0] != from {
			t.Fatalf("round %d: read %d records, want %d from seq %d", round, len(got), n-from, from)
		}
		if err := s.Append(payload(n), 1+n%7); err != nil {
			t.Fatalf("round %d: every record delivered, an Append: %v (stats %+v)", round, err, s.Stats())
		}
		from = n
		n++
	}
	must(t, s.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReusedSegmentAfterCrash: delivered segment files are written
// again; after a crash (no Close: the reused file keeps its old end),
// what they held before is not replayed: the records from the first not
// known delivered on, in order, and nothing else.
func TestReusedSegmentAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 500)
	if got := readAll(t, s, true); len(got) != 500 {
		t.Fatalf("read %d", len(got))
	}
	spares, _ := filepath.Glob(filepath.Join(dir, "*.spare"))
	if len(spares) != maxSpares {
		t.Fatalf("%d spare files, want %d", len(spares), maxSpares)
	}
	appendN(t, s, 500, 520) // into a reused file
	must(t, s.closeFiles())
	var dmg []Damage
	s2 := open(t, dir, 1<<20, &dmg)
	got := readAll(t, s2, true)
	// From the first record not known delivered (the cursor is written
	// now and then) to the last, in order, and nothing else.
	if len(got) < 20 || got[len(got)-1] != 519 {
		t.Fatalf("after the crash replayed %v, want up to seq 519", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("after the crash replayed %v: not one run", got)
		}
	}
	for _, d := range dmg {
		t.Errorf("damage %+v: the reused file's old end is neither damage nor a record cut short", d)
	}
	must(t, s2.Close())
}

// TestTornTailSecondCrash: a record cut short at the end of the last
// segment is reported torn once, at the start after the crash, which
// cuts it off; a second crash before the replay reaches that segment
// leaves nothing for the third start to report, and every whole record
// is replayed.
func TestTornTailSecondCrash(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 20)
	must(t, s.Close())
	segs := segFiles(t, dir)
	last := segs[len(segs)-1]
	fi, _ := os.Stat(last)
	must(t, os.Truncate(last, fi.Size()-5))
	var dmg1, dmg2 []Damage
	s1 := open(t, dir, 1<<20, &dmg1) // nothing read, then a crash
	appendN(t, s1, 100, 105)
	must(t, s1.closeFiles())
	s2 := open(t, dir, 1<<20, &dmg2)
	got := readAll(t, s2, true)
	if len(got) != 24 || got[18] != 18 || got[19] != 100 {
		t.Errorf("replayed %v, want seq 0-18 and 100-104", got)
	}
	if st := s2.Stats(); len(dmg2) != 0 || st.Damaged != 0 || st.Torn != 0 {
		t.Errorf("after a second crash: damage %+v, stats %+v", dmg2, st)
	}
	if len(dmg1) != 1 || !dmg1[0].Torn || dmg1[0].Events != 1+19%7 || s1.Stats().Torn != 1 {
		t.Errorf("at the start after the crash: damage %+v, stats %+v; want the torn record reported there", dmg1, s1.Stats())
	} else {
		t.Logf("torn: %v", dmg1[0].Err)
	}
	must(t, s2.Close())
}

// TestReusedFileSecondStop: records written into a reused segment file,
// then a stop without Close (kill -9, or a shutdown that timed out) and
// another before the replay reaches them: neither start reports the
// file's old end, as damage or as a record cut short, and the records
// are replayed.
func TestReusedFileSecondStop(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 500)
	readAll(t, s, true)
	appendN(t, s, 500, 520) // into a reused file
	must(t, s.closeFiles())
	var dmg []Damage
	s1 := open(t, dir, 1<<20, &dmg) // nothing read
	must(t, s1.closeFiles())
	s2 := open(t, dir, 1<<20, &dmg)
	got := readAll(t, s2, true)
	if len(got) < 20 || got[len(got)-1] != 519 {
		t.Errorf("replayed %v, want up to seq 519", got)
	}
	if st := s2.Stats(); len(dmg) != 0 || st.Damaged != 0 || st.Torn != 0 || s1.Stats().Torn != 0 {
		t.Errorf("damage %+v, stats %+v", dmg, st)
	}
	must(t, s2.Close())
}

// TestRecordPastTheEnd: a segment before the last cut inside its last
// record (a file shortened by hand): the record is damage, and the error
// says it runs past the end of the segment.
func TestRecordPastTheEnd(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 200)
	must(t, s.Close())
	segs := segFiles(t, dir)
	fi, _ := os.Stat(segs[1])
	must(t, os.Truncate(segs[1], fi.Size()-5))
	var dmg []Damage
	s = open(t, dir, 1<<20, &dmg)
	got := readAll(t, s, true)
	if len(got) != 199 || len(dmg) != 1 || dmg[0].Torn || !errors.Is(dmg[0].Err, corrupt.ErrCorrupt) ||
		!strings.Contains(dmg[0].Err.Error(), "runs past the end of the segment") {
		t.Fatalf("%d records replayed, damage %+v", len(got), dmg)
	}
	t.Logf("%v", dmg[0].Err)
	must(t, s.Close())
}

// TestSegmentsRemovedByHand: the segment files removed by hand while
// enrichd is stopped (the cursor left): the records appended after the
// next start are not taken as delivered, and a restart replays them all.
func TestSegmentsRemovedByHand(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 200)
	readAll(t, s, true)
	must(t, s.Close())
	for _, p := range segFiles(t, dir) {
		must(t, os.Remove(p))
	}
	s = open(t, dir, 1<<20, nil)
	appendN(t, s, 1000, 1100)
	must(t, s.Close())
	s = open(t, dir, 1<<20, nil)
	if got := readAll(t, s, false); len(got) != 100 || got[0] != 1000 {
		t.Errorf("replayed %d of the 100 records never delivered", len(got))
	}
	must(t, s.Close())
}

// TestOtherVersion: a directory holding segments of another version of
// the queue (magic LUTQSEG2) is refused at Open, the file named in the
// error, and nothing in it is changed or removed.
func TestOtherVersion(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, nil)
	appendN(t, s, 0, 200)
	must(t, s.Close())
	before := map[string][]byte{}
	for _, p := range segFiles(t, dir) {
		b, err := os.ReadFile(p)
		must(t, err)
		b = bytes.ReplaceAll(b, []byte("LUTQSEG1"), []byte("LUTQSEG2"))
		b = bytes.ReplaceAll(b, []byte("LQR1"), []byte("LQR2"))
		must(t, os.WriteFile(p, b, 0o640))
		before[p] = b
	}
	_, err := Open(Options{Dir: dir, MaxBytes: 1 << 20})
	first := segFiles(t, dir)[0]
	if err == nil || !strings.Contains(err.Error(), first) || !strings.Contains(err.Error(), "another version") {
		t.Fatalf("Open: %v, want the segment of another version %s refused", err, first)
	}
	t.Log(err)
	if after := segFiles(t, dir); len(after) != len(before) {
		t.Fatalf("%d segment files, %d before", len(after), len(before))
	}
	for p, b := range before {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s changed: %v", p, err)
		}
	}
}

// TestOneStorePerDir: a second Open of a directory in use fails, naming
// it, and the records of the first are untouched; once the first is
// closed the directory opens again.
func TestOneStorePerDir(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir, 1<<20, nil)
	appendN(t, a, 0, 100)
	_, err := Open(Options{Dir: dir, MaxBytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), dir+" is used by another enrichd") {
		t.Fatalf("a second Open: %v, want the directory refused", err)
	}
	t.Log(err)
	appendN(t, a, 100, 200)
	must(t, a.Close())
	b := open(t, dir, 1<<20, nil)
	if got := readAll(t, b, true); len(got) != 200 || got[199] != 199 {
		t.Fatalf("replayed %d records, want 200", len(got))
	}
	must(t, b.Close())
}

// TestRecordTooLarge: a record larger than MaxBytes holds, with the
// headers of its segment and its own, is refused at once with
// ErrTooLarge (not ErrFull: it would wait forever), the error giving its
// size and the bound; nothing is appended. A record of exactly what
// MaxBytes holds is appended after it, and replayed whole after a
// reopen, without damage.
func TestRecordTooLarge(t *testing.T) {
	const maxBytes = 64 << 10
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MaxBytes: maxBytes})
	must(t, err)
	most := maxBytes - segHeaderSize - recHeaderSize // the largest payload
	err = s.Append(bytes.Repeat([]byte{'x'}, most+1), 1)
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrFull) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d bytes with its header", most+1+recHeaderSize)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("max_bytes (%d)", maxBytes)) {
		t.Fatalf("a record of %d bytes in a queue of %d: %v, want it refused as too large", most+1, maxBytes, err)
	}
	t.Log(err)
	if st := s.Stats(); st.Written != 0 || st.Full || st.Bytes != segHeaderSize {
		t.Fatalf("after the refused record: stats %+v", st)
	}
	big := bytes.Repeat([]byte{'y'}, most)
	must(t, s.Append(big, 3))
	must(t, s.Close())

	var dmg []Damage
	s = open(t, dir, maxBytes, &dmg)
	r, err := s.Next(nil)
	must(t, err)
	if !bytes.Equal(r.Data, big) || r.Events != 3 {
		t.Fatalf("replayed %d bytes, %d events; want the record of %d bytes, 3 events", len(r.Data), r.Events, most)
	}
	s.Done(r.ID)
	if _, err := s.Next(nil); !errors.Is(err, ErrEmpty) || len(dmg) != 0 {
		t.Fatalf("after the record: %v, damage %+v", err, dmg)
	}
	must(t, s.Close())
}

// TestFullLargeRecord: a record that fits MaxBytes but not beside the
// records of the segment written to waits (ErrFull) until they are
// delivered, and is then appended: the segment they fill is sealed, so
// that it is removed once delivered, not kept as the one written to.
func TestFullLargeRecord(t *testing.T) {
	const maxBytes = 64 << 10 // segments of 16 KiB
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MaxBytes: maxBytes})
	must(t, err)
	small, large := bytes.Repeat([]byte{'s'}, 30000), bytes.Repeat([]byte{'l'}, 40000)
	must(t, s.Append(small, 1))
	<-s.Written()
	if err := s.Append(large, 2); !errors.Is(err, ErrFull) {
		t.Fatalf("a record of %d bytes beside one of %d in a queue of %d: %v, want ErrFull", len(large), len(small), maxBytes, err)
	}
	r, err := s.Next(nil)
	must(t, err)
	s.Done(r.ID)
	select {
	case <-s.Written(): // the reader is told to read on
	default:
		t.Fatal("Written not signalled since the record that fits")
	}
	if _, err := s.Next(nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("a second Next: %v, want ErrEmpty", err)
	}
	if err := s.Append(large, 2); err != nil {
		t.Fatalf("every record delivered, the record of %d bytes: %v (stats %+v)", len(large), err, s.Stats())
	}
	r, err = s.Next(nil)
	must(t, err)
	if !bytes.Equal(r.Data, large) || r.Events != 2 {
		t.Fatalf("read %d bytes, %d events; want the large record", len(r.Data), r.Events)
	}
	s.Done(r.ID)
	if st := s.Stats(); st.Bytes > maxBytes || st.Written != 3 || st.Delivered != 3 {
		t.Errorf("stats %+v", st)
	}
	must(t, s.Close())
}
