package sample

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// SendOptions say how Send frames and paces the lines.
type SendOptions struct {
	OctetCount bool // TCP: RFC 6587 octet counting ("LEN MSG") instead of newline framing
	Rate       int  // lines per second; 0: as fast as the peer reads
}

// Send sends the newline-terminated lines of r to target, a
// "tcp://HOST:PORT" (one connection, newline framing or octet counting) or
// "udp://HOST:PORT" (one datagram per line, without the newline), and
// returns how many lines it sent. A TCP connection is closed for writing
// once every line is written, so the receiver sees the end of the stream.
func Send(ctx context.Context, target string, r io.Reader, o SendOptions) (int64, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "udp") || u.Host == "" || u.Path != "" {
		return 0, fmt.Errorf("sample: send to %q: want tcp://HOST:PORT or udp://HOST:PORT", target)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, u.Scheme, u.Host)
	if err != nil {
		return 0, fmt.Errorf("sample: send: %w", err)
	}
	defer conn.Close()
	// Cancelling ctx fails the pending and later writes.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	in := bufio.NewReaderSize(r, 1<<16)
	udp := u.Scheme == "udp"
	w := bufio.NewWriterSize(conn, 1<<16)
	var sent int64
	start := time.Now()
	var frame []byte
	for {
		line, rerr := in.ReadSlice('\n')
		if errors.Is(rerr, bufio.ErrBufferFull) {
			return sent, fmt.Errorf("sample: send: line %d is longer than %d bytes", sent+1, in.Size())
		}
		if len(line) > 0 {
			msg := line
			if msg[len(msg)-1] == '\n' {
				msg = msg[:len(msg)-1]
			}
			switch {
			case udp:
				if _, err := conn.Write(msg); err != nil {
					return sent, sendErr(ctx, err)
				}
			case o.OctetCount:
				frame = strconv.AppendInt(frame[:0], int64(len(msg)), 10)
				frame = append(append(frame, ' '), msg...)
				if _, err := w.Write(frame); err != nil {
					return sent, sendErr(ctx, err)
				}
			default:
				if _, err := w.Write(msg); err != nil {
					return sent, sendErr(ctx, err)
				}
				if err := w.WriteByte('\n'); err != nil {
					return sent, sendErr(ctx, err)
				}
			}
			sent++
			if o.Rate > 0 {
				if ahead := time.Duration(sent)*time.Second/time.Duration(o.Rate) - time.Since(start); ahead > 5*time.Millisecond {
					if err := w.Flush(); err != nil {
						return sent, sendErr(ctx, err)
					}
					select {
					case <-time.After(ahead):
					case <-ctx.Done():
						return sent, ctx.Err()
					}
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return sent, rerr
		}
	}
	if err := w.Flush(); err != nil {
		return sent, sendErr(ctx, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		if err := tc.CloseWrite(); err != nil {
			return sent, sendErr(ctx, err)
		}
	}
	return sent, nil
}

func sendErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("sample: send: %w", err)
}
