package enrichd

import (
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

func init() {
	RegisterOutput(OutputKind{Type: "tcp", Endpoint: EndpointAddress, New: func(oc *OutputConfig, env *Env) (Output, error) {
		st := env.OutputStats()
		s := &tcpSink{addr: oc.Address, w: newLineBuf(oc.BufferSize), st: st, log: env.Log}
		s.send = s.writeConn
		return newStreamOutput(s, st, env.Log), nil
	}})
}

var (
	mOutReconn       = MetricDesc("output_reconnects_total", "Connections made by a TCP output.", "output")
	mOutBreaks       = MetricDesc("output_connection_breaks_total", "Connections of a TCP output that broke (a write failed or the peer closed).", "output")
	mOutPossiblyLost = MetricDesc("output_events_possibly_lost_total", "Events a TCP output wrote on connections that broke and that the peer may not have read (an upper bound).", "output")
)

// tcpSink writes lines to a TCP peer, over one connection at a time.
//
// What it guarantees is what plain TCP lets it know: that the kernel took
// the bytes, not that the peer read them. When a write fails, the lines
// not wholly written are kept and written again on the next connection
// (from the start of the first line not wholly written), so those are
// never lost; but the lines the kernel had already taken on the broken
// connection are lost if the peer did not read them (its kernel had not
// acknowledged them, or it closed with them unread). So delivery across a
// peer close is at most once for what the connection held, and the sink
// counts the break and, as an upper bound, the events it may have lost
// (tcpBreak).
//
// The daemon retries a failed write (a new connection each time) with a
// backoff: while the peer is away, the output goroutine waits and the
// bounded queues slow the inputs down.
type tcpSink struct {
	addr string
	c    net.Conn
	w    lineBuf
	send sendFunc
	st   *OutputStats
	log  *slog.Logger

	// The stream: taken is the bytes Write was given, lines their lines,
	// sent the bytes (whole lines) written to connections. marks are the
	// (taken, lines) after each Write since about the last 32 MiB, to
	// count the lines of a byte range.
	taken, lines, sent uint64
	marks              []streamMark
	prunedLines        uint64 // the lines of the last mark dropped
	// The connection: it began at offset start of the stream, after
	// startLines lines; ackBase is its peer's acknowledged bytes at that
	// point, maxWnd the largest receive window its peer advertised.
	start, startLines, ackBase, maxWnd uint64

	reconnects, breaks, possiblyLost atomic.Uint64
}

// streamMark is where one Write ended in the stream.
type streamMark struct{ end, lines uint64 }

// marksKept is how far back (bytes of the stream) the marks go, at least.
const marksKept = 32 << 20

func (s *tcpSink) connect() error {
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		return errConnect{err}
	}
	s.c = c
	s.reconnects.Add(1)
	s.start, s.startLines, s.maxWnd = s.sent, s.linesBefore(s.sent, s.prunedLines), 0
	s.ackBase = 0
	if ti, ok := tcpInfo(c); ok {
		s.ackBase, s.maxWnd = ti.acked, ti.window
	}
	return nil
}

func (s *tcpSink) Write(p []byte, lines int) error {
	s.taken += uint64(len(p))
	s.lines += uint64(lines)
	s.marks = append(s.marks, streamMark{s.taken, s.lines})
	if h := len(s.marks) / 2; h > 2048 && s.marks[h].end+marksKept < s.sent {
		s.prunedLines = s.marks[h-1].lines
		s.marks = s.marks[:copy(s.marks, s.marks[h:])]
	}
	if s.c != nil && s.w.buffered() == 0 && peerClosed(s.c) {
		// The peer is gone: what the kernel took for it may be lost,
		// and a write now could seem to succeed.
		s.tcpBreak()
	}
	return s.w.write(p, s.send)
}

// writeConn writes p on the connection, connecting first if there is
// none. On an error the connection is given up (tcpBreak) and the bytes
// of p's whole lines written are returned: the rest is written again on
// the next connection.
func (s *tcpSink) writeConn(p []byte) (int, error) {
	if s.c == nil {
		if err := s.connect(); err != nil {
			return 0, err
		}
	}
	// The peer's window as its last acknowledgement advertised it, before
	// this write fills it: noted on every write, as the peer's buffer can
	// grow (receive buffer autotuning) between flushes, and the largest
	// window bounds what a break can leave unread in it (tcpBreak).
	if ti, ok := tcpInfo(s.c); ok {
		s.maxWnd = max(s.maxWnd, ti.window)
	}
	n, err := s.c.Write(p)
	if err != nil {
		n = wholeLines(p, n)
	}
	s.sent += uint64(n)
	s.st.Bytes.Add(uint64(n))
	if err != nil {
		s.tcpBreak()
	}
	return n, err
}

// tcpBreak gives up the connection, counting the break and the events
// written on it that the peer may not have read: those after the bytes
// its kernel acknowledged, and, before them, as many as twice its largest
// receive window could hold (acknowledged but maybe unread, in its
// receive buffer: the bound assumes a peer advertises at least half of
// that buffer when it is empty, as Linux does for full segments). Without
// TCP_INFO, every event written on the connection counts.
func (s *tcpSink) tcpBreak() {
	lo := s.start
	if ti, ok := tcpInfo(s.c); ok {
		s.maxWnd = max(s.maxWnd, ti.window)
		// maxWnd is 0 on kernels without tcpi_snd_wnd: no bound.
		if acked := ti.acked - min(ti.acked, s.ackBase); s.maxWnd > 0 && acked > 2*s.maxWnd {
			lo = s.start + min(acked-2*s.maxWnd, s.sent-s.start)
		}
	}
	var lost uint64
	if lo == s.start {
		lost = s.linesAt(s.sent) - s.startLines
	} else {
		lost = s.linesAt(s.sent) - s.linesBefore(lo, s.startLines)
	}
	s.breaks.Add(1)
	s.possiblyLost.Add(lost)
	s.log.Warn("output connection broken; lines not yet written are written again on a new connection",
		"events_possibly_lost", lost)
	s.c.Close()
	s.c = nil
}

// linesAt returns the lines of the stream up to the end of the Write
// that holds offset x: at least the lines wholly before x.
func (s *tcpSink) linesAt(x uint64) uint64 {
	for _, m := range s.marks {
		if m.end >= x {
			return m.lines
		}
	}
	return s.lines
}

// linesBefore returns the lines of the Writes wholly before offset x: at
// most the lines wholly before x (floor when the marks do not reach back
// to x).
func (s *tcpSink) linesBefore(x, floor uint64) uint64 {
	n := floor
	for _, m := range s.marks {
		if m.end > x {
			break
		}
		n = max(n, m.lines)
	}
	return n
}

// Flush writes what the buffer holds, and what an earlier write could
// not; then it notes the peer's receive window.
func (s *tcpSink) Flush() error {
	if s.c == nil && s.w.buffered() == 0 {
		return nil
	}
	if err := s.w.flush(s.send); err != nil {
		return err
	}
	if ti, ok := tcpInfo(s.c); ok {
		s.maxWnd = max(s.maxWnd, ti.window)
	}
	return nil
}

func (s *tcpSink) Close() error {
	err := s.Flush()
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	return err
}

func (s *tcpSink) Collect(m MetricSink) {
	m.Counter(mOutReconn, s.reconnects.Load(), s.st.Name)
	m.Counter(mOutBreaks, s.breaks.Load(), s.st.Name)
	m.Counter(mOutPossiblyLost, s.possiblyLost.Load(), s.st.Name)
}
