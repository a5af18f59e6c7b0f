package relp

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadFrames reads arbitrary bytes as a RELP stream: no panic, every
// frame read writes back to the same bytes, and a stream stops at its first
// error.
func FuzzReadFrames(f *testing.F) {
	f.Add([]byte("1 open 30 relp_version=0\ncommands=syslog\n2 syslog 11 <13>1 hello\n3 close 0\n"))
	f.Add([]byte("1 rsp 6 200 OK\n0 serverclose 0\n"))
	f.Add([]byte("999999999 syslog 3 abc\n1 syslog 0\n"))
	f.Add([]byte("1 syslog 5 ab\ncd\n2 syslog 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1024)
		var again []byte
		for {
			fr, err := r.Next()
			if err != nil {
				var fe *FrameError
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &fe) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				if errors.Is(err, io.EOF) && !bytes.Equal(again, data) {
					t.Fatalf("frames %q rewrite the stream %q", again, data)
				}
				return
			}
			again = AppendFrame(again, fr.Txnr, fr.Cmd, fr.Data)
			if !bytes.HasPrefix(data, again) {
				// Leading zeros in numbers are accepted; those frames
				// do not write back the same.
				if hasLeadingZero(data) {
					return
				}
				t.Fatalf("frame %d %q %q does not write back as read", fr.Txnr, fr.Cmd, fr.Data)
			}
			if fr.Cmd == CmdRsp {
				if rsp, err := ParseRsp(fr.Data); err == nil {
					_, _ = ParseOffers(rsp.Extra)
				}
			}
		}
	})
}

func hasLeadingZero(b []byte) bool {
	prev := byte(' ')
	for i, c := range b {
		if c == '0' && (prev == ' ' || prev == '\n' || i == 0) && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9' {
			return true
		}
		prev = c
	}
	return false
}
