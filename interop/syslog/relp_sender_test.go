package syslog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test speaks RELP with code of its own (the frame codec is internal
// to enrichd): frames "TXNR SP COMMAND SP DATALEN [SP DATA] LF".

func appendRELPFrame(dst []byte, txnr uint32, cmd string, data []byte) []byte {
	dst = strconv.AppendUint(dst, uint64(txnr), 10)
	dst = append(dst, ' ')
	dst = append(dst, cmd...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(len(data)), 10)
	if len(data) > 0 {
		dst = append(dst, ' ')
		dst = append(dst, data...)
	}
	return append(dst, '\n')
}

// readRELPFrame reads one frame.
func readRELPFrame(r *bufio.Reader) (txnr uint32, cmd string, data []byte, err error) {
	head, err := r.ReadString(' ')
	if err != nil {
		return 0, "", nil, err
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(head, " "), 10, 32)
	if err != nil {
		return 0, "", nil, err
	}
	if cmd, err = r.ReadString(' '); err != nil {
		return 0, "", nil, err
	}
	var l int
	var sep byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			return 0, "", nil, err
		}
		if c < '0' || c > '9' {
			sep = c
			break
		}
		l = l*10 + int(c-'0')
	}
	if l > 0 {
		if sep != ' ' {
			return 0, "", nil, fmt.Errorf("bad frame: %q after the data length", sep)
		}
		data = make([]byte, l+1)
		if _, err := io.ReadFull(r, data); err != nil {
			return 0, "", nil, err
		}
		sep, data = data[l], data[:l]
	}
	if sep != '\n' {
		return 0, "", nil, fmt.Errorf("bad frame: no trailer")
	}
	return uint32(n), strings.TrimSuffix(cmd, " "), data, nil
}

// relpSend is a RELP client as librelp's: it opens a session on c, sends
// every event as a syslog command with at most window of them
// unanswered, waits for every answer and closes the session. It returns
// when the server's serverclose hint (or the end of the connection)
// follows the answer to close.
func relpSend(c net.Conn, evs []input, window int) error {
	defer c.Close()
	answers := make(chan error, 1)
	credit := make(chan struct{}, window)
	for range window {
		credit <- struct{}{}
	}
	total := uint32(len(evs) + 2) // open, the events, close
	go func() {
		r := bufio.NewReaderSize(c, 64<<10)
		for got := uint32(0); got < total; {
			txnr, cmd, data, err := readRELPFrame(r)
			if err != nil {
				answers <- fmt.Errorf("after %d answers: %w", got, err)
				return
			}
			if cmd != "rsp" {
				answers <- fmt.Errorf("after %d answers: command %q", got, cmd)
				return
			}
			if txnr != total && !strings.HasPrefix(string(data), "200 OK") {
				answers <- fmt.Errorf("answer %d: %q", txnr, data)
				return
			}
			if got++; txnr > 1 && txnr < total {
				credit <- struct{}{}
			}
		}
		answers <- nil
	}()
	w := bufio.NewWriterSize(c, 64<<10)
	txnr := uint32(1)
	frame := func(cmd string, data []byte) {
		buf := w.AvailableBuffer()
		buf = appendRELPFrame(buf, txnr, cmd, data)
		_, _ = w.Write(buf)
		txnr++
	}
	frame("open", []byte("relp_version=0\nrelp_software=lutkit-test\ncommands=syslog"))
	if err := w.Flush(); err != nil {
		return err
	}
	for _, ev := range evs {
		select {
		case <-credit:
		default:
			// The window is full: what is buffered goes, then wait.
			if err := w.Flush(); err != nil {
				return err
			}
			select {
			case <-credit:
			case err := <-answers:
				return fmt.Errorf("the server stopped answering: %w", err)
			case <-time.After(60 * time.Second):
				return fmt.Errorf("no answer within 60 s")
			}
		}
		frame("syslog", ev.wire)
	}
	frame("close", nil)
	if err := w.Flush(); err != nil {
		return err
	}
	select {
	case err := <-answers:
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("no answer to close within 60 s")
	}
}

// lineCounter counts the lines of a file that grows, reading only what
// was added since the last call.
type lineCounter struct {
	path  string
	off   int64
	lines int
	buf   []byte
}

func (lc *lineCounter) count() int {
	f, err := os.Open(lc.path)
	if err != nil {
		return lc.lines
	}
	defer f.Close()
	if lc.buf == nil {
		lc.buf = make([]byte, 1<<20)
	}
	for {
		n, err := f.ReadAt(lc.buf, lc.off)
		lc.lines += bytes.Count(lc.buf[:n], []byte{'\n'})
		lc.off += int64(n)
		if err != nil || n == 0 {
			return lc.lines
		}
	}
}

// cpuSeconds is the CPU time (user and system) the process pid has used.
func cpuSeconds(tb testing.TB, pid int) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command (in parentheses): state is field 3,
	// utime 14 and stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ, 100 on Linux
}
