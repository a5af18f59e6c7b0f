package queue

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/internal/corrupt"
)

// The segment file's layout. A segment starts with a header: the magic
// "LUTQSEG1" and the segment's number (little endian). Records follow,
// each
//
//	0  magic      "LQR1"
//	4  length     uint32, of the payload
//	8  events     uint32, the lines of the payload
//	12 payload    xxh3 of the payload, uint64
//	20 header     low 32 bits of the xxh3 of bytes 0-19, seeded with
//	              the segment's number
//	24 payload
//
// The header's own checksum tells a damaged length from a damaged
// payload: a record whose payload is damaged is skipped by its length;
// after a damaged header the reader looks for the next record whose
// header and payload both check. Seeding it with the segment's number
// makes the records a reused segment file held before (past what was
// written to it since) fail it.
//
// Each record is written with an end mark after it, recHeaderSize zero
// bytes, in the same system call; the next record is written over it.
// After a crash, the last segment's end past its last record is a
// record cut short if it does not begin with the mark, and what a reused
// file held before if it does (see cutTail).
const (
	segHeaderSize = 16
	recHeaderSize = 24
	// MaxRecord bounds a record's payload: a longer length is damage.
	MaxRecord = 256 << 20
)

var (
	segMagic = [8]byte{'L', 'U', 'T', 'Q', 'S', 'E', 'G', '1'}
	recMagic = [4]byte{'L', 'Q', 'R', '1'}
	endMark  [recHeaderSize]byte
)

// putSegHeader writes the header of segment id into b.
func putSegHeader(b []byte, id uint64) {
	copy(b, segMagic[:])
	binary.LittleEndian.PutUint64(b[8:], id)
}

// otherVersion returns an error if b, the start of a segment file, is
// the header of another version of the layout: the magic's first seven
// bytes with another last one. Any other bytes are left to
// checkSegHeader (damage).
func otherVersion(b []byte) error {
	if len(b) >= len(segMagic) && bytes.Equal(b[:7], segMagic[:7]) && b[7] != segMagic[7] {
		return fmt.Errorf("a segment of another version of the queue (%q; this enrichd reads %q)", b[:8], segMagic[:])
	}
	return nil
}

// checkSegHeader checks the header of segment id.
func checkSegHeader(b []byte, id uint64) error {
	if len(b) < segHeaderSize {
		return corrupt.At("queue segment", 0, "header truncated (%d bytes)", len(b))
	}
	if !bytes.Equal(b[:8], segMagic[:]) {
		return corrupt.At("queue segment", 0, "bad magic %q", b[:8])
	}
	if got := binary.LittleEndian.Uint64(b[8:]); got != id {
		return corrupt.At("queue segment", 8, "segment number %d in the file of segment %d", got, id)
	}
	return nil
}

// putRecHeader writes the header of a record of payload p holding events
// lines, in segment seg, into h.
func putRecHeader(h []byte, p []byte, events int, seg uint64) {
	copy(h, recMagic[:])
	binary.LittleEndian.PutUint32(h[4:], uint32(len(p)))
	binary.LittleEndian.PutUint32(h[8:], uint32(events))
	binary.LittleEndian.PutUint64(h[12:], xxh3.Hash(p))
	binary.LittleEndian.PutUint32(h[20:], uint32(xxh3.HashSeed(h[:20], seg)))
}

// recHeader is a record's header, decoded.
type recHeader struct {
	length, events uint32
	sum            uint64
}

// parseRecHeader decodes and checks a record's header in segment seg.
func parseRecHeader(h []byte, seg uint64) (recHeader, bool) {
	if len(h) < recHeaderSize || !bytes.Equal(h[:4], recMagic[:]) ||
		binary.LittleEndian.Uint32(h[20:]) != uint32(xxh3.HashSeed(h[:20], seg)) {
		return recHeader{}, false
	}
	rh := recHeader{length: binary.LittleEndian.Uint32(h[4:]), events: binary.LittleEndian.Uint32(h[8:]), sum: binary.LittleEndian.Uint64(h[12:])}
	return rh, rh.length <= MaxRecord
}

// Damage is a span of a segment that did not check: skipped, never
// replayed.
type Damage struct {
	Off, Len int64
	// Events is how many events the damaged records held, as far as a
	// header that checks says (a damaged header does not tell).
	Events int
	// Torn says the span is the end of the segment cut short by a crash
	// while a record was written (never acknowledged), not damage; found
	// at Open in the last segment an earlier run wrote, and cut off.
	Torn bool
	// Zeros says the span Torn is zeros past the end mark, to the end of
	// the file: records written that the system had not put on the disk
	// when it crashed (a power loss; they were not synced), lost.
	Zeros bool
	Err   error
}

// Entry is a record found by Scan.
type Entry struct {
	Off     int64 // of its header
	Payload []byte
	Events  int
}

// Scan reads the records of b, bytes of segment seg's file from offset
// base, calling rec for each record that checks and bad for each span
// that does not. A damaged payload is skipped by its header's length;
// after a damaged header, or a record that runs past the end of b, Scan
// resumes at the next offset where a record's header and payload check.
func Scan(b []byte, base int64, seg uint64, rec func(Entry), bad func(Damage)) {
	off := 0
	for off < len(b) {
		e, n, ok := next(b[off:], seg)
		if ok {
			e.Off = base + int64(off)
			rec(e)
			off += n
			continue
		}
		if n > 0 {
			// The header checks, its payload does not: skip it by its
			// length.
			events := int(binary.LittleEndian.Uint32(b[off+8:]))
			bad(Damage{Off: base + int64(off), Len: int64(n), Events: events,
				Err: corrupt.At("queue record", base+int64(off), "payload checksum mismatch (%d events)", events)})
			off += n
			continue
		}
		// The header is damaged, or the record runs past the end: find
		// the next record that checks.
		skip := resync(b[off:], seg)
		d := Damage{Off: base + int64(off), Len: int64(skip)}
		if rh, ok := parseRecHeader(b[off:], seg); ok {
			d.Events = int(rh.events)
			d.Err = corrupt.At("queue record", d.Off, "record of %d bytes (%d events) runs past the end of the segment, %d bytes after it; %d bytes skipped",
				recHeaderSize+int64(rh.length), rh.events, len(b)-off, d.Len)
		} else {
			d.Err = corrupt.At("queue record", d.Off, "damaged record header; %d bytes skipped", d.Len)
		}
		bad(d)
		off += skip
	}
}

// next decodes the record at the start of b. It returns the record, its
// size, and whether it checks; n > 0 with !ok is a record whose header
// checks but whose payload does not.
func next(b []byte, seg uint64) (Entry, int, bool) {
	rh, ok := parseRecHeader(b, seg)
	if !ok {
		return Entry{}, 0, false
	}
	end := recHeaderSize + int(rh.length)
	if end > len(b) {
		return Entry{}, 0, false
	}
	p := b[recHeaderSize:end]
	if xxh3.Hash(p) != rh.sum {
		return Entry{}, end, false
	}
	return Entry{Payload: p, Events: int(rh.events)}, end, true
}

// resync returns how many bytes of b to skip to the next record that
// checks (header and payload), or len(b) if none does. b[0] is not one.
func resync(b []byte, seg uint64) int {
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], recMagic[:])
		if j < 0 {
			return len(b)
		}
		i += j
		if _, _, ok := next(b[i:], seg); ok {
			return i
		}
		i++
	}
	return len(b)
}
