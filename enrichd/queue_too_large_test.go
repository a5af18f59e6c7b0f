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
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/queue"
)

// tooLargeQueue is a queue of max_bytes 4 KiB, whose records hold 4056
// bytes at most, and the log it writes.
func tooLargeQueue(t *testing.T) (*diskQueue, *logBuffer) {
	t.Helper()
	st, err := queue.Open(queue.Options{Dir: filepath.Join(t.TempDir(), "queue"), MaxBytes: 4096})
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	logs := &logBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	d := &Daemon{hardStop: make(chan struct{})}
	t.Cleanup(func() { close(d.hardStop) })
	return &diskQueue{d: d, st: st, log: slog.New(slog.NewTextHandler(w, nil))}, logs
}

// appendAndRead runs q.append(b) while a reader reads and delivers
// every record until it has read events; it fails unless both are done
// within 10 s, and returns the payloads read, joined, and their records.
func appendAndRead(t *testing.T, q *diskQueue, b *Buffer, events int, logs *logBuffer) ([]byte, int) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- q.append(b) }()
	var got []byte
	read, records := 0, 0
	deadline := time.After(10 * time.Second)
	for read < events {
		rec, err := q.st.Next(nil)
		if errors.Is(err, queue.ErrEmpty) {
			select {
			case <-q.st.Written():
			case <-time.After(10 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%d events of %d read after 10 s; log:\n%s", read, events, logs.String())
			}
			continue
		}
		must(t, err)
		got = append(got, rec.Data...)
		read += rec.Events
		records++
		q.st.Done(rec.ID)
	}
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("the append gave up; log:\n%s", logs.String())
		}
	case <-deadline:
		t.Fatalf("the append of a buffer larger than a record has not returned after 10 s; log:\n%s", logs.String())
	}
	if rec, err := q.st.Next(nil); !errors.Is(err, queue.ErrEmpty) {
		t.Fatalf("a record more than the events appended: %d events, %v", rec.Events, err)
	}
	return got, records
}

// TestQueueBufferTooLarge: a buffer of enriched lines larger than a
// record of the queue may be (max_bytes less the headers) is appended as
// several records of whole lines, in order, none lost, never retried as
// a failed write; a line alone larger than that is dropped, logged at
// ERROR once with its size and the bound and counted in its input's
// TooLarge (enrichd_events_dropped_total{reason="too_large"}), the lines
// around it appended.
func TestQueueBufferTooLarge(t *testing.T) {
	line := func(i, size int) string {
		s := fmt.Sprintf(`{"seq":%d,"pad":"`, i)
		return s + strings.Repeat("x", size-len(s)-3) + "\"}\n"
	}
	t.Run("split", func(t *testing.T) {
		q, logs := tooLargeQueue(t)
		var lines strings.Builder
		const n = 40
		for i := range n {
			lines.WriteString(line(i, 300)) // 12000 bytes: three records at least
		}
		in := &InputStats{Name: "tcp", Type: "tcp"}
		b := &Buffer{Events: n, in: in}
		b.B = []byte(lines.String())
		got, records := appendAndRead(t, q, b, n, logs)
		if !bytes.Equal(got, []byte(lines.String())) || records < 3 {
			t.Fatalf("the reader got %d bytes in %d records; want the %d bytes appended, in order, in 3 records or more",
				len(got), records, lines.Len())
		}
		if l := logs.String(); strings.Contains(l, "retrying") || strings.Contains(l, "level=ERROR") || in.TooLarge.Load() != 0 {
			t.Errorf("a buffer split with no loss: %d dropped; log:\n%s", in.TooLarge.Load(), l)
		}
	})
	t.Run("one line too large", func(t *testing.T) {
		q, logs := tooLargeQueue(t)
		want := line(0, 100) + line(2, 100)
		in := &InputStats{Name: "tcp", Type: "tcp"}
		b := &Buffer{Events: 3, in: in}
		b.B = []byte(line(0, 100) + line(1, 5000) + line(2, 100))
		got, _ := appendAndRead(t, q, b, 2, logs)
		if string(got) != want {
			t.Fatalf("the reader got %q, want the two lines around the one too large", got)
		}
		l := logs.String()
		if strings.Count(l, "level=ERROR") != 1 || !strings.Contains(l, "bytes=5000") || !strings.Contains(l, "max_record_bytes=4056") ||
			!strings.Contains(l, "raise queue.max_bytes") || strings.Contains(l, "retrying") {
			t.Errorf("the line dropped is not logged at ERROR once with its size and the bound; log:\n%s", l)
		}
		if in.TooLarge.Load() != 1 {
			t.Errorf("%d events counted as dropped too large, want 1", in.TooLarge.Load())
		}
	})
}
