package enrichd

import (
	"bytes"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/queue"
	"github.com/lutkit/lutkit/internal/retry"
)

// diskQueue is the daemon's persistent queue (queue: in the
// configuration), between the workers and the outputs. The workers'
// buffers are appended to it (writeLoop) and given back at once, so that
// an output that cannot deliver does not hold up the inputs while the
// queue has room; the outputs are fed from it (readLoop), records left
// by an earlier run first. A record is forgotten once every output has
// delivered it (its Ack, recordAck), and a segment file removed once all
// of it is. An input batch's Ack is told Delivered once its events are
// in the queue as durably as queue.sync says.
type diskQueue struct {
	d   *Daemon
	cfg QueueConfig
	st  *queue.Store
	log *slog.Logger
	// in are the workers' buffers; free the buffers the reader fills.
	in, free chan *Buffer
	// written is closed once writeLoop has appended its last buffer.
	written chan struct{}
	// loops are writeLoop and readLoop.
	loops sync.WaitGroup

	full      atomic.Bool
	fullTotal atomic.Uint64
	// failing: a write or sync failed and is retried; the inputs wait.
	failing  atomic.Bool
	failures [len(errorReasons)]atomic.Uint64
	readErrs atomic.Uint64
}

// recordAck is the Ack of a buffer read from the queue: once every
// output delivered it, the queue forgets its record.
type recordAck struct {
	Ack
	st *queue.Store
	id uint64
}

func (a *recordAck) Delivered() { a.st.Done(a.id) }

// openQueue opens the queue directory; the reader gets n buffers of
// size bytes.
func (d *Daemon) openQueue(n, size int) (*diskQueue, error) {
	qc := d.cfg.Queue
	q := &diskQueue{d: d, cfg: qc, log: d.log.With("queue", qc.Path), in: make(chan *Buffer, n), free: make(chan *Buffer, n), written: make(chan struct{})}
	st, err := queue.Open(queue.Options{Dir: qc.Path, MaxBytes: int64(qc.MaxBytes), OnDamage: q.damaged})
	if err != nil {
		return nil, err
	}
	q.st = st
	for range n {
		b := &Buffer{pool: q.free}
		b.B = make([]byte, 0, size)
		q.free <- b
	}
	if s := st.Stats(); s.Segments > 1 {
		q.log.Info("queue: replaying what an earlier run left, before new events", "bytes", s.Bytes, "segments", s.Segments-1)
	}
	return q, nil
}

// damaged reports a span of a segment skipped.
func (q *diskQueue) damaged(path string, dm queue.Damage) {
	if dm.Zeros {
		q.log.Warn("queue: zeros where records were written are cut off: the system crashed before they were on the disk, and events may be lost",
			"file", path, "offset", dm.Off, "bytes", dm.Len)
		return
	}
	if dm.Torn {
		q.log.Warn("queue: a record cut short by a crash while it was written is dropped (it was never acknowledged)",
			"file", path, "offset", dm.Off, "bytes", dm.Len)
		return
	}
	q.log.Error("queue: damaged record skipped, never replayed; the records around it are", "file", path, "offset", dm.Off,
		"bytes", dm.Len, "events", dm.Events, "err", dm.Err)
}

// Queue retries of a failed write or sync wait between these; a failing
// queue is logged at most every outputLogEvery.
const (
	queueRetryMin = 50 * time.Millisecond
	queueRetryMax = 2 * time.Second
	// queueFullPoll is how often a full queue looks for room besides
	// being told of a segment removed.
	queueFullPoll = 200 * time.Millisecond
)

// writeLoop appends the workers' buffers until in is closed.
func (q *diskQueue) writeLoop() {
	defer close(q.written)
	var acks []*Ack
	var ins []*InputStats // the inputs of the buffers appended, told with acks
	tell := func() {
		for _, a := range acks {
			a.to.Delivered()
		}
		for _, in := range ins {
			in.delivered()
		}
		clear(acks)
		acks = acks[:0]
		clear(ins)
		ins = ins[:0]
	}
	unsynced := 0
	var tick <-chan time.Time
	if iv := q.cfg.Sync.Interval; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	sync := func() bool {
		if unsynced == 0 && len(acks) == 0 && len(ins) == 0 {
			return true
		}
		if err := q.st.Sync(); err != nil && q.retry("sync", err, q.st.Sync) != nil {
			return false
		}
		unsynced = 0
		tell()
		return true
	}
	for {
		select {
		case b, ok := <-q.in:
			if !ok {
				if !q.cfg.Sync.None {
					sync()
				}
				return
			}
			ok = q.append(b)
			if ok && b.ack != nil {
				acks = append(acks, b.ack)
			}
			if ok && b.in != nil {
				ins = append(ins, b.in)
			}
			unsynced += b.Events
			b.refs.Store(1)
			b.Release()
			if !ok {
				return
			}
			switch s := q.cfg.Sync; {
			case s.None:
				q.st.NoSync()
				tell()
			case s.Events > 0 && (unsynced >= s.Events || len(q.in) == 0):
				if !sync() {
					return
				}
			}
		case <-tick:
			if !sync() {
				return
			}
		case <-q.d.hardStop:
			return
		}
	}
}

// append appends b, waiting while the queue is full and retrying a
// write that fails; false when the daemon gives up (at shutdown_timeout).
// A buffer larger than a record may be is appended as several (split).
func (q *diskQueue) append(b *Buffer) bool {
	return q.appendRecord(b, b.B, b.Events)
}

// appendRecord appends p, events lines of b, as one record.
func (q *diskQueue) appendRecord(b *Buffer, p []byte, events int) bool {
	op := func() error { return q.st.Append(p, events) }
	err := op()
	for {
		switch {
		case err == nil:
			q.roomAgain()
			return true
		case errors.Is(err, queue.ErrTooLarge):
			// Appending it again would fail again.
			return q.split(b, p)
		case errors.Is(err, queue.ErrFull):
			// Full at once, or a write retried found the space freed
			// meanwhile taken.
			q.isFull()
			if !q.waitRoom() {
				q.log.Error("queue: full at the end of the shutdown; the events not appended are lost", "events", events)
				return false
			}
			err = op()
		default:
			q.full.Store(false) // there is room; the write fails
			if err = q.retry("write", err, op); err != nil && !errors.Is(err, queue.ErrFull) {
				return false
			}
		}
	}
}

// split appends p, lines of b too many for one record, as records of
// whole lines as large as the queue takes, in order. A line alone larger
// than that cannot be queued: it is logged and counted as dropped
// (reason too_large), the lines around it appended.
func (q *diskQueue) split(b *Buffer, p []byte) bool {
	limit := q.st.MaxPayload()
	for len(p) > 0 {
		n, events := 0, 0
		for n < len(p) {
			end := bytes.IndexByte(p[n:], '\n') + 1
			if end == 0 {
				end = len(p) - n
			}
			if n+end > limit {
				break
			}
			n += end
			events++
		}
		if n == 0 { // the first line alone is too large
			end := bytes.IndexByte(p, '\n') + 1
			if end == 0 {
				end = len(p)
			}
			q.log.Error("queue: an event larger than the queue's records may be is dropped: raise queue.max_bytes",
				"bytes", end, "max_record_bytes", limit, "max_bytes", q.st.Stats().MaxBytes)
			if b.in != nil {
				b.in.TooLarge.Add(1)
			}
			p = p[end:]
			continue
		}
		if !q.appendRecord(b, p[:n], events) {
			return false
		}
		p = p[n:]
	}
	return true
}

// isFull sets and logs the queue full (max_bytes).
func (q *diskQueue) isFull() {
	if !q.full.Swap(true) {
		q.fullTotal.Add(1)
		s := q.st.Stats()
		q.log.Warn("queue: full; the inputs wait (TCP senders block, UDP drops are counted) and /readyz answers 503 until the outputs deliver",
			"bytes", s.Bytes, "max_bytes", s.MaxBytes)
	}
}

// roomAgain clears the queue full after an append.
func (q *diskQueue) roomAgain() {
	if q.full.Swap(false) {
		q.log.Info("queue: room again; the inputs are read again")
	}
}

// waitRoom waits until a segment is removed, or queueFullPoll; false when
// the daemon gives up.
func (q *diskQueue) waitRoom() bool {
	t := time.NewTimer(queueFullPoll)
	defer t.Stop()
	select {
	case <-q.st.Freed():
	case <-t.C:
	case <-q.d.hardStop:
		return false
	}
	return true
}

// retry handles err from op (a write or a sync): it counts and logs it as
// an output's error is, and runs op again after a backoff until it
// succeeds (nil), finds the queue full (ErrFull: wait for room) or the
// daemon gives up (the last error, the loss logged; at
// shutdown_timeout). Meanwhile the queue is failing: /readyz answers 503.
func (q *diskQueue) retry(what string, err error, op func() error) error {
	q.failing.Store(true)
	defer q.failing.Store(false)
	began := time.Now()
	var logged time.Time
	failures := 0
	for attempt := 0; ; attempt++ {
		r := errorReason(err)
		q.failures[r].Add(1)
		failures++
		if time.Since(logged) >= outputLogEvery {
			args := []any{"reason", errorReasons[r], "err", err, "failures", failures, "failing_for", time.Since(began)}
			if what == "sync" {
				q.log.Error("queue: sync failed; retrying, the events wait", args...)
			} else {
				q.log.Error("queue: write failed; retrying, the events wait", args...)
			}
			logged = time.Now()
		}
		t := time.NewTimer(retry.Backoff(queueRetryMin, queueRetryMax, attempt))
		select {
		case <-q.d.hardStop:
			t.Stop()
			q.log.Error("queue: "+what+" failed and the daemon gave up; the events not in the queue are lost", "err", err)
			return err
		case <-t.C:
		}
		if err = op(); err == nil || errors.Is(err, queue.ErrFull) {
			q.log.Info("queue: works again", "op", what, "failures", failures, "failed_for", time.Since(began))
			return err
		}
	}
}

// readLoop feeds the outputs from the queue until the writer is done and
// every record is read; then it closes the outputs' channel.
func (q *diskQueue) readLoop() {
	defer close(q.d.outCh)
	writerDone := false
	var logged time.Time
	for attempt := 0; ; {
		var b *Buffer
		select {
		case b = <-q.free:
		case <-q.d.hardStop:
			return
		}
		for {
			rec, err := q.st.Next(b.B[:0])
			if err == nil {
				a := &recordAck{st: q.st, id: rec.ID}
				a.Init(a)
				b.B, b.Events, b.ack, b.received = rec.Data, rec.Events, &a.Ack, time.Time{}
				select {
				case q.d.outCh <- b:
				case <-q.d.hardStop:
					return
				}
				attempt = 0
				break
			}
			if errors.Is(err, queue.ErrEmpty) {
				if writerDone {
					q.free <- b
					return
				}
				select {
				case <-q.st.Written():
				case <-q.written:
					writerDone = true
				case <-q.d.hardStop:
					return
				}
				continue
			}
			q.readErrs.Add(1)
			if time.Since(logged) >= outputLogEvery {
				q.log.Error("queue: reading failed; retrying", "err", err)
				logged = time.Now()
			}
			t := time.NewTimer(retry.Backoff(queueRetryMin, queueRetryMax, attempt))
			attempt++
			select {
			case <-q.d.hardStop:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// start runs writeLoop and readLoop.
func (q *diskQueue) start() {
	q.loops.Add(2)
	go func() { defer q.loops.Done(); q.writeLoop() }()
	go func() { defer q.loops.Done(); q.readLoop() }()
}

// abandon closes the store at a shutdown that timed out (hardStop
// closed), once writeLoop and readLoop have returned: the position
// delivered is written down and the directory's lock released. What the
// outputs deliver later is replayed at the next start.
func (q *diskQueue) abandon(grace time.Duration) {
	stopped := make(chan struct{})
	go func() { q.loops.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(grace):
		q.log.Error("queue: its writer or reader still runs after the shutdown timeout; leaving the queue open", "waited_seconds", seconds(grace))
		return
	}
	if err := q.st.Close(); err != nil {
		q.log.Error("queue: close", "err", err)
	}
}

// close syncs (unless sync is none) and closes the store, once the
// outputs are closed.
func (q *diskQueue) close() {
	if !q.cfg.Sync.None {
		if err := q.st.Sync(); err != nil {
			q.log.Error("queue: sync at shutdown", "err", err)
		}
	}
	if err := q.st.Close(); err != nil {
		q.log.Error("queue: close", "err", err)
	}
}

var (
	mQBytes      = MetricDesc("disk_queue_bytes", "Bytes of the persistent queue's segment files.")
	mQMaxBytes   = MetricDesc("disk_queue_max_bytes", "The persistent queue's bound (queue.max_bytes).")
	mQSegments   = MetricDesc("disk_queue_segments", "Segment files of the persistent queue.")
	mQFull       = MetricDesc("disk_queue_full", "1 while the persistent queue is full: the inputs wait, /readyz answers 503.")
	mQFailing    = MetricDesc("disk_queue_write_failing", "1 while the persistent queue's writes or fsyncs fail and are retried (its file system full, EIO): the inputs wait, /readyz answers 503.")
	mQFullTotal  = MetricDesc("disk_queue_full_total", "Times the persistent queue became full.")
	mQEvents     = MetricDesc("disk_queue_events_total", "Events through the persistent queue since the start, by stage: written (appended), synced (of those written, fsynced), read (handed to the outputs, an earlier run's included), delivered (by every output).", "stage")
	mQSyncs      = MetricDesc("disk_queue_syncs_total", "fsyncs of the persistent queue.")
	mQWriteErrs  = MetricDesc("disk_queue_write_errors_total", "Failed writes and syncs of the persistent queue, by reason (retried; the inputs wait).", "reason")
	mQReadErrs   = MetricDesc("disk_queue_read_errors_total", "Failed reads of the persistent queue's files (retried).")
	mQDamaged    = MetricDesc("disk_queue_damaged_records_total", "Damaged spans of the queue's segments skipped (checksum mismatch), never replayed.")
	mQDamagedB   = MetricDesc("disk_queue_damaged_bytes_total", "Bytes of the damaged spans skipped.")
	mQDamagedEv  = MetricDesc("disk_queue_damaged_events_total", "Events the damaged records held, as far as their headers tell (a damaged header does not).")
	mQTornTotal  = MetricDesc("disk_queue_torn_records_total", "Records found cut short at the end of a segment by a crash (never acknowledged), and zeros where records were written that a crash of the system lost, dropped.")
	queueMetrics = []string{"written", "synced", "read", "delivered"}
)

// Collect exports the queue's metrics.
func (q *diskQueue) Collect(m MetricSink) {
	s := q.st.Stats()
	m.Gauge(mQBytes, float64(s.Bytes))
	m.Gauge(mQMaxBytes, float64(s.MaxBytes))
	m.Gauge(mQSegments, float64(s.Segments))
	m.Gauge(mQFull, b2f(q.full.Load()))
	m.Gauge(mQFailing, b2f(q.failing.Load()))
	m.Counter(mQFullTotal, q.fullTotal.Load())
	for i, v := range []uint64{s.Written, s.Synced, s.Read, s.Delivered} {
		m.Counter(mQEvents, v, queueMetrics[i])
	}
	m.Counter(mQSyncs, s.Syncs)
	for r, reason := range errorReasons {
		m.Counter(mQWriteErrs, q.failures[r].Load(), reason)
	}
	m.Counter(mQReadErrs, q.readErrs.Load())
	m.Counter(mQDamaged, s.Damaged)
	m.Counter(mQDamagedB, s.DamagedBytes)
	m.Counter(mQDamagedEv, s.DamagedEvents)
	m.Counter(mQTornTotal, s.Torn)
}
