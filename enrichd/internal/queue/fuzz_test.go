package queue

import (
	"testing"

	"github.com/zeebo/xxh3"
)

// FuzzScan: whatever the bytes of a segment, Scan neither panics nor
// returns a record that does not check, and the records and the damaged
// spans it reports cover the bytes exactly, in order.
func FuzzScan(f *testing.F) {
	var seg []byte
	for i := range 4 {
		p := payload(i)
		h := make([]byte, recHeaderSize)
		putRecHeader(h, p, 1+i%7, 7)
		seg = append(append(seg, h...), p...)
	}
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	bad := append([]byte(nil), seg...)
	bad[30] ^= 1
	f.Add(bad)
	f.Add([]byte("LQR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		off := int64(0)
		Scan(b, 0, 7, func(e Entry) {
			if e.Off != off {
				t.Fatalf("record at %d, want %d", e.Off, off)
			}
			h, ok := parseRecHeader(b[e.Off:], 7)
			if !ok || xxh3.Hash(e.Payload) != h.sum || int(h.events) != e.Events {
				t.Fatalf("record at %d does not check", e.Off)
			}
			off += recHeaderSize + int64(len(e.Payload))
		}, func(d Damage) {
			if d.Off != off || d.Len <= 0 || d.Err == nil {
				t.Fatalf("damage %+v at %d", d, off)
			}
			off += d.Len
		})
		if off != int64(len(b)) {
			t.Fatalf("covered %d of %d bytes", off, len(b))
		}
	})
}
