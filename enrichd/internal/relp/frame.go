package relp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Commands of RELP version 0.
const (
	CmdOpen        = "open"
	CmdSyslog      = "syslog"
	CmdClose       = "close"
	CmdRsp         = "rsp"
	CmdServerClose = "serverclose"
)

// MaxTxnr is the largest transaction number; the one after it is 1.
const MaxTxnr = 999_999_999

// NextTxnr returns the transaction number that follows n.
func NextTxnr(n uint32) uint32 {
	if n >= MaxTxnr {
		return 1
	}
	return n + 1
}

// Frame is one RELP frame. Data aliases the Reader's buffer until the next
// call of Next.
type Frame struct {
	Txnr uint32
	Cmd  string
	Data []byte
}

// FrameError is a frame that breaks the protocol: the session cannot go
// on after it. Offset counts the octets read before the frame began.
type FrameError struct {
	Offset int64
	Reason string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("relp: invalid frame at octet %d: %s", e.Offset, e.Reason)
}

// ErrTooLong is wrapped by the FrameError of a frame whose data is longer
// than the Reader's limit.
var ErrTooLong = errors.New("frame data longer than the limit")

// Reader reads frames from a stream.
type Reader struct {
	r      *bufio.Reader
	max    int
	buf    []byte
	offset int64 // octets read before the current frame
	cmd    [32]byte
	last   string // the previous command, reused when it repeats
}

// NewReader returns a Reader of frames whose data is at most maxData
// octets (librelp's default is 128 KiB).
func NewReader(r io.Reader, maxData int) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 4096 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &Reader{r: br, max: maxData}
}

// Buffered returns the number of octets read from the stream but not yet
// parsed: a frame there can be taken without waiting for the network.
func (r *Reader) Buffered() int { return r.r.Buffered() }

// Next reads the next frame. At the end of the stream between two frames
// it returns io.EOF; inside one, io.ErrUnexpectedEOF; a frame that breaks
// the protocol, a *FrameError.
func (r *Reader) Next() (Frame, error) {
	start := r.offset
	var f Frame
	n := 0 // octets of this frame read so far
	bad := func(reason string) (Frame, error) {
		r.offset += int64(n)
		return Frame{}, &FrameError{Offset: start, Reason: reason}
	}
	eof := func(err error) (Frame, error) {
		r.offset += int64(n)
		if errors.Is(err, io.EOF) && n > 0 {
			return Frame{}, io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	// TXNR
	txnr, c, err := r.number(&n)
	switch {
	case err != nil:
		return eof(err)
	case txnr.digits > 9:
		return bad("transaction number longer than 9 digits")
	case c != ' ' || txnr.digits == 0:
		return bad(fmt.Sprintf("unexpected %q in the transaction number", c))
	}
	f.Txnr = uint32(txnr.v)
	// COMMAND
	clen := 0
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			return eof(err)
		}
		n++
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			if clen == len(r.cmd) {
				return bad("command longer than 32 letters")
			}
			r.cmd[clen] = c
			clen++
			continue
		}
		if c == ' ' && clen > 0 {
			break
		}
		return bad(fmt.Sprintf("unexpected %q in the command", c))
	}
	if string(r.cmd[:clen]) == r.last {
		f.Cmd = r.last
	} else {
		f.Cmd = string(r.cmd[:clen])
		r.last = f.Cmd
	}
	// DATALEN, then SP DATA or the trailer
	dl, sep, err := r.number(&n)
	switch {
	case err != nil:
		return eof(err)
	case dl.digits > 9:
		return bad("data length longer than 9 digits")
	case dl.digits == 0:
		return bad(fmt.Sprintf("unexpected %q in the data length", sep))
	}
	dlen := dl.v
	if dlen == 0 {
		if sep != '\n' {
			return bad(fmt.Sprintf("unexpected %q after a data length of 0", sep))
		}
		f.Data = r.buf[:0]
		r.offset += int64(n)
		return f, nil
	}
	if sep != ' ' {
		return bad(fmt.Sprintf("unexpected %q after the data length", sep))
	}
	if dlen > uint64(r.max) {
		r.offset += int64(n)
		return Frame{}, &FrameError{Offset: start, Reason: fmt.Sprintf("%v: %d octets, limit %d", ErrTooLong, dlen, r.max)}
	}
	if cap(r.buf) < int(dlen) {
		r.buf = make([]byte, dlen)
	}
	f.Data = r.buf[:dlen]
	m, err := io.ReadFull(r.r, f.Data)
	n += m
	if err != nil {
		return eof(io.ErrUnexpectedEOF)
	}
	c, err = r.r.ReadByte()
	if err != nil {
		return eof(io.ErrUnexpectedEOF)
	}
	n++
	if c != '\n' {
		return bad(fmt.Sprintf("unexpected %q where the trailer (LF) belongs", c))
	}
	r.offset += int64(n)
	return f, nil
}

// num is a number read by Reader.number.
type num struct {
	v      uint64
	digits int // more than 9: the number was cut off at its tenth digit
}

// number reads decimal digits, at most 10 (one more than a field may
// have, so that the caller can tell it is too long), and returns them
// and the octet after them; n counts the octets read.
func (r *Reader) number(n *int) (num, byte, error) {
	var x num
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			return x, 0, err
		}
		*n++
		if c < '0' || c > '9' {
			return x, c, nil
		}
		x.digits++
		if x.digits > 9 {
			return x, c, nil
		}
		x.v = x.v*10 + uint64(c-'0')
	}
}

// AppendFrame appends the frame txnr cmd data to dst.
func AppendFrame(dst []byte, txnr uint32, cmd string, data []byte) []byte {
	dst = strconv.AppendUint(dst, uint64(txnr), 10)
	dst = append(dst, ' ')
	dst = append(dst, cmd...)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(len(data)), 10)
	if len(data) > 0 {
		dst = append(dst, ' ')
		dst = append(dst, data...)
	}
	return append(dst, '\n')
}
