package enrichd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/queue"
)

// retryFull is a queue whose next append fails on its full file system
// after it began a new segment, and then finds max_bytes reached: the
// write retried meets a full queue (appendFull).
type retryFull struct {
	q      *diskQueue
	logs   *logBuffer
	filler string
	last   *Buffer
	held   int // the records in the queue before last
}

// retryPayload is record seq's payload, of size bytes, beginning with
// its seq.
func retryPayload(seq, size int) []byte {
	b := fmt.Appendf(nil, "seq=%d ", seq)
	return append(b, bytes.Repeat([]byte{'a' + byte(seq%26)}, size-len(b))...)
}

// newRetryFull builds it on a 64 KiB tmpfs: 12 records of 1000 bytes in
// four segments of 4 KiB, max_bytes leaving room for the last record of
// 4968 bytes but not for it and the header of the segment it begins, and
// the tmpfs filled (by another file) but for one page: the new segment's
// header takes it, the record's write fails with ENOSPC.
func newRetryFull(t *testing.T) *retryFull {
	t.Helper()
	disk := filepath.Join(t.TempDir(), "disk")
	must(t, os.Mkdir(disk, 0o755))
	mountTmpfs(t, disk, "64k")
	qdir := filepath.Join(disk, "queue")
	const segBytes, held = 4096, 12
	const sealed = 4 * (16 + 3*(24+1000)) // four segments of three records
	const maxBytes = sealed + 5000
	st, err := queue.Open(queue.Options{Dir: qdir, MaxBytes: maxBytes, SegmentBytes: segBytes})
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	for i := range held {
		must(t, st.Append(retryPayload(i, 1000), 1))
	}
	st.NoSync() // as writeLoop does with sync: none: the sealed segments' files are closed
	s := st.Stats()
	// The last record fits what is left, 8 bytes to spare, but not with
	// the 16 bytes of the header of the segment it begins.
	lastSize := int(maxBytes-s.Bytes) - 8 - 24
	if s.Segments != 4 || s.Bytes != sealed || lastSize+24+16 <= 4096 {
		t.Fatalf("the queue holds %+v: not the state the test builds on", s)
	}
	r := &retryFull{logs: &logBuffer{}, filler: filepath.Join(disk, "filler"), held: held}
	var w io.Writer = r.logs
	if testing.Verbose() {
		w = io.MultiWriter(r.logs, os.Stderr)
	}
	d := &Daemon{hardStop: make(chan struct{})}
	r.q = &diskQueue{d: d, st: st, log: slog.New(slog.NewTextHandler(w, nil))}
	r.last = &Buffer{Events: 1}
	r.last.B = retryPayload(held, lastSize)

	f, err := os.Create(r.filler)
	must(t, err)
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fi, err := f.Stat()
	must(t, err)
	must(t, f.Truncate(fi.Size()/4096*4096-4096))
	must(t, f.Close())
	return r
}

// appending runs q.append(last) and returns its answer.
func (r *retryFull) appending() <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- r.q.append(r.last) }()
	return done
}

// waitFull waits until the append, its write retried, waits for room:
// the queue full, not failing, the append not returned.
func (r *retryFull) waitFull(t *testing.T, done <-chan bool) {
	t.Helper()
	waitFor(t, 30*time.Second, func() bool { return r.q.full.Load() && strings.Contains(r.logs.String(), "queue: full") }, func() string {
		return fmt.Sprintf("the retried write never found the queue full; log:\n%s", r.logs.String())
	})
	if !strings.Contains(r.logs.String(), "queue: write failed; retrying") || !strings.Contains(r.logs.String(), "reason=enospc") {
		t.Fatalf("the first write did not fail on the full file system; log:\n%s", r.logs.String())
	}
	time.Sleep(3 * queueFullPoll) // it looks for room again meanwhile
	select {
	case ok := <-done:
		t.Fatalf("the append returned %v while the queue is full", ok)
	default:
	}
	if !r.q.full.Load() || r.q.failing.Load() {
		t.Errorf("while it waits for room: full %v, failing %v; want full, not failing", r.q.full.Load(), r.q.failing.Load())
	}
}

// TestQueueRetriedWriteFindsFull: a write of the queue fails (ENOSPC)
// after beginning a new segment, and its retry finds max_bytes reached
// (the new segment's header took the last bytes). The append waits for
// room as for a full queue (full, not failing, "queue: full" logged);
// once records are delivered it appends the record, once: the reader
// gets every record, in order, and the last one once. At a shutdown that
// gives up meanwhile, the append returns false and the log says the
// events are lost.
func TestQueueRetriedWriteFindsFull(t *testing.T) {
	t.Run("room again", func(t *testing.T) {
		r := newRetryFull(t)
		st := r.q.st
		done := r.appending()
		r.waitFull(t, done)

		var buf []byte
		for i := range r.held {
			rec, err := st.Next(buf)
			must(t, err)
			if want := retryPayload(i, 1000); !bytes.Equal(rec.Data, want) {
				t.Fatalf("record %d: %.20q, want %.20q", i, rec.Data, want)
			}
			st.Done(rec.ID)
			buf = rec.Data
		}
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("the append gave up")
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("every record delivered, the append still waits: stats %+v; log:\n%s", st.Stats(), r.logs.String())
		}
		if r.q.full.Load() || r.q.failing.Load() {
			t.Errorf("once appended: full %v, failing %v", r.q.full.Load(), r.q.failing.Load())
		}
		var got [][]byte
		for {
			rec, err := st.Next(nil)
			if errors.Is(err, queue.ErrEmpty) {
				break
			}
			must(t, err)
			got = append(got, rec.Data)
			st.Done(rec.ID)
		}
		if len(got) != 1 || !bytes.Equal(got[0], r.last.B) {
			t.Fatalf("after the 12 records the reader got %d records, want the last one once", len(got))
		}
		if s := st.Stats(); s.Written != uint64(r.held+1) || s.Read != s.Written {
			t.Errorf("stats %+v: want %d events written and read", s, r.held+1)
		}
		t.Logf("log:\n%s", r.logs.String())
	})

	t.Run("shutdown", func(t *testing.T) {
		r := newRetryFull(t)
		done := r.appending()
		r.waitFull(t, done)
		close(r.q.d.hardStop)
		select {
		case ok := <-done:
			if ok {
				t.Fatal("the append says it appended the record into a full queue")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the shutdown gave up, the append still waits")
		}
		if l := r.logs.String(); !strings.Contains(l, "the events not appended are lost") || !strings.Contains(l, "events=1") {
			t.Errorf("the events lost at the shutdown are not logged:\n%s", l)
		}
		if _, err := r.q.st.Next(nil); err != nil {
			t.Fatalf("the records held before: %v", err)
		}
	})
}
