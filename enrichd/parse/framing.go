package parse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrOctetCount is wrapped by the error Framer.Next returns when an
// RFC 6587 octet-counted stream carries a malformed length prefix. The
// stream cannot be resynchronised; the caller should drop the connection.
var ErrOctetCount = errors.New("parse: malformed octet count")

// maxCountDigits bounds the MSG-LEN prefix of an octet-counted frame.
// Nine digits allow frames just under 1 GB, far above any sane maximum.
const maxCountDigits = 9

// minFramerBuf is the read buffer a Framer starts with (and the smallest
// it is given).
const minFramerBuf = 4096

// readAhead is what a Framer's buffer grows to, at most, when its reads
// fill it: a busy stream is read 64 KiB at a time, as few system calls as
// with a buffer of the default max_message_size, while a connection of
// short messages now and then keeps 4 KiB.
const readAhead = 64 << 10

// framing modes, decided from the first byte of a connection.
const (
	modeUnknown = iota
	modeOctet
	modeNewline
)

// Framer splits a TCP syslog stream into messages. It detects the framing
// from the first byte of the stream: an ASCII digit selects RFC 6587
// octet counting ("LEN SP MSG"), anything else selects newline framing,
// where a message ends at '\n' or at NUL, the two trailers RFC 6587
// (3.4.2) names (Python's SysLogHandler ends each message with NUL and
// sends no '\n').
//
// Messages longer than the maximum given to NewFramer are truncated to the
// maximum and reported with truncated == true; the rest of that line or
// frame is read and discarded. A trailing "\n" or "\r\n" is removed from
// every message, in both modes, and is not counted against the maximum.
// In newline mode empty lines are skipped.
//
// A line cut by the end of the stream or by a read error (a timeout: the
// drain's deadline at shutdown) is delivered, then the error. A frame
// such an error cuts in octet-counting mode is not (its length is not
// reached): Next returns the error alone and Cut reports it.
//
// A Framer is not safe for concurrent use.
type Framer struct {
	r    io.Reader
	buf  []byte
	size int // what buf grows to at most: room for a message of max and its line end
	// busy: the last read filled the buffer; the next fill doubles it, up
	// to readAhead (or size, if less).
	busy  bool
	start int // first unread byte in buf
	end   int // end of buffered data
	max   int
	mode  uint8
	// cut: the error Next returned came inside an octet-counted frame or
	// its length prefix, whose bytes were read and are dropped.
	cut bool
	// nul (not a line framer) ends a line at NUL as at '\n'.
	nul bool

	skipLine bool  // newline mode: discard up to and including the next '\n'
	discard  int64 // octet mode: bytes of an oversize frame still to discard
	rerr     error // read error, seen once the buffered data is used up
	fatal    error // error already returned by Next, returned again
}

// NewFramer returns a Framer reading from r that returns messages of at
// most maxMsg bytes (values < 1 are treated as 1). Its read buffer starts
// at 4 KiB and grows as longer messages come, up to about maxMsg bytes,
// and while its reads fill it, up to 64 KiB (readAhead): a connection of
// short messages now and then costs 4 KiB whatever maxMsg is, and a busy
// one is read 64 KiB at a time.
func NewFramer(r io.Reader, maxMsg int) *Framer {
	if maxMsg < 1 {
		maxMsg = 1
	}
	n := maxMsg + 64
	if n < minFramerBuf {
		n = minFramerBuf
	}
	return &Framer{r: r, buf: make([]byte, minFramerBuf), size: n, max: maxMsg, nul: true}
}

// NewLineFramer returns a Framer that frames r by newlines whatever its
// first byte (JSON or raw lines, files): a leading digit does not select
// octet counting, and a line ends at '\n' only.
func NewLineFramer(r io.Reader, maxMsg int) *Framer {
	f := NewFramer(r, maxMsg)
	f.mode, f.nul = modeNewline, false
	return f
}

// Reset makes f read from r as a new connection (framing is detected
// again), keeping the buffer, unless it grew: a new one starts at 4 KiB.
func (f *Framer) Reset(r io.Reader) {
	buf := f.buf
	if len(buf) > minFramerBuf {
		buf = make([]byte, minFramerBuf)
	}
	*f = Framer{r: r, buf: buf, size: f.size, max: f.max, nul: f.nul}
}

// Octet reports whether the stream was detected as octet counted. It is
// meaningful once Next has returned a message.
func (f *Framer) Octet() bool { return f.mode == modeOctet }

// Cut reports whether the error Next returned cut an octet-counted frame
// (or its length prefix): the bytes read of it are dropped. It is false
// at a clean end between messages, in newline mode (a cut line is
// delivered) and in the discarded remainder of an oversize frame (its
// message was delivered truncated).
func (f *Framer) Cut() bool { return f.cut }

// Next returns the next message. msg aliases the Framer's buffer and is
// valid until the next call to Next or Reset. truncated reports that the
// message was longer than the maximum and was cut.
//
// At a clean end of stream (between messages) err is io.EOF. In newline
// mode a final line without its '\n' is a complete message (files often
// lack the last newline, and a sender may close right after its last
// line): it is returned, and the next call returns io.EOF; so is a line a
// read error cuts (a timeout), and the next call returns that error. In
// octet mode,
// if the stream ends inside a frame or its length prefix (or inside the
// discarded remainder of an oversize frame) err is io.ErrUnexpectedEOF and
// the partial frame is not returned. A malformed octet count yields an
// error wrapping ErrOctetCount. Other read errors are returned as is.
// Once Next has returned an error it keeps returning it.
func (f *Framer) Next() (msg []byte, truncated bool, err error) {
	if f.fatal != nil {
		return nil, false, f.fatal
	}
	msg, truncated, err = f.next()
	if err != nil {
		f.fatal = err
	}
	return msg, truncated, err
}

func (f *Framer) next() (msg []byte, truncated bool, err error) {
	if f.mode == modeUnknown {
		if err := f.fill(1); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			return nil, false, err
		}
		if c := f.buf[f.start]; c >= '0' && c <= '9' {
			f.mode = modeOctet
		} else {
			f.mode = modeNewline
		}
	}
	if f.mode == modeOctet {
		return f.nextOctet()
	}
	return f.nextLine()
}

// fill makes at least need bytes (need <= f.size) available at
// f.buf[f.start:], growing the buffer if it is shorter. It returns
// io.ErrUnexpectedEOF if the stream ends first and io.EOF only if it ended
// with nothing buffered.
func (f *Framer) fill(need int) error {
	if f.end-f.start >= need {
		return nil
	}
	if grow := f.busy && len(f.buf) < min(readAhead, f.size); need > len(f.buf) || grow {
		nb := make([]byte, min(max(2*len(f.buf), need), f.size))
		f.end = copy(nb, f.buf[f.start:f.end])
		f.start = 0
		f.buf = nb
		f.busy = false
	} else if f.start == f.end {
		f.start, f.end = 0, 0
	} else if f.start+need > len(f.buf) {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	empty := 0
	for f.end-f.start < need {
		if f.rerr != nil {
			if errors.Is(f.rerr, io.EOF) {
				if f.start == f.end {
					return io.EOF
				}
				return io.ErrUnexpectedEOF
			}
			return f.rerr
		}
		n, err := f.r.Read(f.buf[f.end:])
		if n < 0 || n > len(f.buf)-f.end {
			f.rerr = errors.New("parse: reader returned invalid count")
			continue
		}
		f.end += n
		f.busy = f.end == len(f.buf)
		if err != nil {
			f.rerr = err
		} else if n == 0 {
			if empty++; empty >= 100 {
				f.rerr = io.ErrNoProgress
			}
		}
	}
	return nil
}

// nextLine implements newline framing.
func (f *Framer) nextLine() ([]byte, bool, error) {
	if f.skipLine {
		if err := f.skipToNewline(); err != nil {
			return nil, false, err
		}
	}
	scanned := 0 // bytes after f.start known to hold no '\n'
	for {
		// A line of max bytes plus "\r\n" fits in max+2 bytes; if no '\n'
		// shows up within that window the line is oversize.
		lim := f.end
		if lim-f.start > f.max+2 {
			lim = f.start + f.max + 2
		}
		if i := f.lineEnd(f.buf[f.start+scanned : lim]); i >= 0 {
			i += f.start + scanned
			line := f.buf[f.start:i]
			f.start = i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if len(line) == 0 {
				scanned = 0
				continue
			}
			if len(line) > f.max {
				return line[:f.max], true, nil
			}
			return line, false, nil
		}
		scanned = lim - f.start
		if scanned >= f.max+2 {
			line := f.buf[f.start : f.start+f.max]
			f.start += f.max + 2
			f.skipLine = true
			return line, true, nil
		}
		if err := f.fill(scanned + 1); err != nil {
			eof := errors.Is(err, io.ErrUnexpectedEOF)
			if eof || scanned > 0 {
				// The stream ended inside a line: a file without a final
				// newline, a sender closing after its last line, or a
				// read cut at the drain's deadline. The line is complete
				// as far as the sender is concerned, or as far as it will
				// ever be read, so deliver it; the next call reports
				// io.EOF, or the read error that cut the line.
				line := f.buf[f.start : f.start+scanned]
				f.start += scanned
				if n := len(line); n > 0 && line[n-1] == '\r' {
					line = line[:n-1]
				}
				if len(line) == 0 {
					if !eof {
						f.fatal = err
						return nil, false, err
					}
					return nil, false, io.EOF
				}
				if len(line) > f.max {
					return line[:f.max], true, nil
				}
				return line, false, nil
			}
			f.fatal = err
			return nil, false, err
		}
	}
}

// lineEnd returns the index in b of the first end of a line: '\n' or,
// unless f is a line framer, NUL; or -1.
func (f *Framer) lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if !f.nul {
		return i
	}
	if i >= 0 {
		b = b[:i]
	}
	if j := bytes.IndexByte(b, 0); j >= 0 {
		return j
	}
	return i
}

// skipToNewline discards input up to and including the next end of a
// line.
func (f *Framer) skipToNewline() error {
	for {
		if i := f.lineEnd(f.buf[f.start:f.end]); i >= 0 {
			f.start += i + 1
			f.skipLine = false
			return nil
		}
		f.start = f.end
		if err := f.fill(1); err != nil {
			// io.EOF: the stream ended in the discarded tail of an
			// oversize line, which was already delivered truncated.
			f.fatal = err
			return err
		}
	}
}

// nextOctet implements RFC 6587 octet counting.
func (f *Framer) nextOctet() ([]byte, bool, error) {
	for f.discard > 0 {
		if f.start == f.end {
			if err := f.fill(1); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				f.fatal = err
				return nil, false, err
			}
		}
		n := int64(f.end - f.start)
		if n > f.discard {
			n = f.discard
		}
		f.start += int(n)
		f.discard -= n
	}

	// Stray line ends between frames are tolerated.
	for {
		if err := f.fill(1); err != nil {
			return nil, false, err // io.EOF here is a clean end
		}
		if c := f.buf[f.start]; c != '\n' && c != '\r' {
			break
		}
		f.start++
	}

	// MSG-LEN = NONZERO-DIGIT *DIGIT, then SP.
	n := 0
	digits := 0
	for {
		if f.start+digits == f.end {
			if err := f.fill(digits + 1); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				f.fatal, f.cut = err, true
				return nil, false, err
			}
		}
		c := f.buf[f.start+digits]
		if c == ' ' && digits > 0 {
			break
		}
		if c < '0' || c > '9' || (digits == 0 && c == '0') {
			f.fatal = fmt.Errorf("%w: unexpected byte %q in length prefix %q", ErrOctetCount, c, f.buf[f.start:f.start+digits])
			return nil, false, f.fatal
		}
		if digits == maxCountDigits {
			f.fatal = fmt.Errorf("%w: length prefix longer than %d digits", ErrOctetCount, maxCountDigits)
			return nil, false, f.fatal
		}
		n = n*10 + int(c-'0')
		digits++
	}
	f.start += digits + 1

	// A frame of max bytes plus "\r\n" is read whole: its message, once
	// the line end is cut, is not too long.
	want, truncated := n, false
	if want > f.max+2 {
		want, truncated = f.max, true
		f.discard = int64(n - f.max)
	}
	if err := f.fill(want); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		f.fatal, f.cut = err, true
		return nil, false, err
	}
	msg := f.buf[f.start : f.start+want]
	f.start += want
	if !truncated {
		if k := len(msg); k > 0 && msg[k-1] == '\n' {
			msg = msg[:k-1]
			if k := len(msg); k > 0 && msg[k-1] == '\r' {
				msg = msg[:k-1]
			}
		}
		if len(msg) > f.max {
			msg, truncated = msg[:f.max], true
		}
	}
	return msg, truncated, nil
}
