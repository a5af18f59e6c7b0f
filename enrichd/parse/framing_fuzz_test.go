package parse

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func FuzzFramer(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), uint16(10), false)
	f.Add([]byte("3 abc5 hello\n12 hello world!"), uint16(5), true)
	f.Add([]byte("999999999 x"), uint16(3), false)
	f.Add([]byte("53 <156>Nov 30 06:16:21 vm myapp[3480]: hello octet 3164"), uint16(2048), true)
	f.Add([]byte("\n\n\r\nxxxxxxxxxxxxxxxxxxxxxxxx\nyy"), uint16(4), false)
	f.Add([]byte("1x"), uint16(1), false)
	f.Fuzz(func(t *testing.T, data []byte, max uint16, oneByte bool) {
		m := int(max%4096) + 1
		var r io.Reader = bytes.NewReader(data)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		fr := NewFramer(r, m)
		total := 0
		for i := 0; ; i++ {
			msg, trunc, err := fr.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrOctetCount) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(msg) > m {
				t.Fatalf("message of %d bytes > max %d", len(msg), m)
			}
			if trunc && len(msg) != m {
				t.Fatalf("truncated message of %d bytes, max %d", len(msg), m)
			}
			if !fr.Octet() && (len(msg) == 0 || bytes.IndexByte(msg, '\n') >= 0) {
				t.Fatalf("newline framing returned %q", msg)
			}
			total += len(msg)
			if total > len(data) || i > len(data) {
				t.Fatalf("returned more than the input")
			}
		}
	})
}
