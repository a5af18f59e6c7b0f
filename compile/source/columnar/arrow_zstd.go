package columnar

import (
	"encoding/binary"
	"fmt"
)

// checkZstdWindows checks the buffers of a record batch compressed with
// ZSTD, in its message body: the window each zstd frame declares must
// not pass limit. The zstd decoder of arrow-go allocates a window's
// history outside the allocator arrow-go is given, up to 512 MiB a frame
// whatever the frame holds.
func checkZstdWindows(batch fbTable, body []byte, limit int64) (err error) {
	// The offsets of the flatbuffer are not checked: one that points out
	// of the metadata panics, as it would in arrow-go.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	comp, ok := batch.table(batchCompression)
	if !ok {
		return nil
	}
	if f := comp.field(compressionCodec); f == 0 || comp.b[f] != codecZstd {
		return nil
	}
	start, n, err := batch.vector(batchBuffers, 16)
	if err != nil {
		return err
	}
	for i := range n {
		off := int64(binary.LittleEndian.Uint64(batch.b[start+16*i:]))
		length := int64(binary.LittleEndian.Uint64(batch.b[start+16*i+8:]))
		// A buffer out of the body, or without its uncompressed length,
		// arrow-go refuses itself; one of length -1 is not compressed.
		if off < 0 || length < 8 || off > int64(len(body)) || length > int64(len(body))-off {
			continue
		}
		buf := body[off : off+length]
		if int64(binary.LittleEndian.Uint64(buf)) == -1 {
			continue
		}
		if w := zstdWindow(buf[8:]); w > uint64(limit) {
			return fmt.Errorf("a zstd frame of buffer %d asks for a window of %d bytes, more than the %d bytes a file of its size may decode to", i, w, limit)
		}
	}
	return nil
}

// zstdWindow returns the largest window the zstd frames in b declare
// (RFC 8878, 3.1.1): the window descriptor, or the content size of a
// single segment frame. It stops at the first bytes that are not a frame,
// where the decoder stops.
func zstdWindow(b []byte) uint64 {
	var w uint64
	for len(b) >= 8 {
		magic := binary.LittleEndian.Uint32(b)
		if magic&0xfffffff0 == 0x184d2a50 { // a skippable frame
			n := uint64(binary.LittleEndian.Uint32(b[4:]))
			if n > uint64(len(b)-8) {
				break
			}
			b = b[8+n:]
			continue
		}
		if magic != 0xfd2fb528 {
			break
		}
		fhd := b[4]
		single := fhd&0x20 != 0
		pos := 5
		var window uint64
		if !single {
			wd := b[5]
			base := uint64(1) << (10 + wd>>3)
			window = base + base/8*uint64(wd&7)
			pos++
		}
		pos += [4]int{0, 1, 2, 4}[fhd&3] // the dictionary ID
		fcs := [4]int{0, 2, 4, 8}[fhd>>6]
		if single && fcs == 0 {
			fcs = 1
		}
		if pos+fcs > len(b) {
			return max(w, window)
		}
		if single {
			switch fcs {
			case 1:
				window = uint64(b[pos])
			case 2:
				window = uint64(binary.LittleEndian.Uint16(b[pos:])) + 256
			case 4:
				window = uint64(binary.LittleEndian.Uint32(b[pos:]))
			case 8:
				window = binary.LittleEndian.Uint64(b[pos:])
			}
		}
		w = max(w, window)
		pos += fcs
		for last := false; !last; {
			if pos+3 > len(b) {
				return w
			}
			h := int(b[pos]) | int(b[pos+1])<<8 | int(b[pos+2])<<16
			last = h&1 != 0
			size := h >> 3
			if h>>1&3 == 1 { // RLE: one byte
				size = 1
			}
			pos += 3 + size
		}
		if fhd&4 != 0 { // the checksum
			pos += 4
		}
		if pos > len(b) {
			break
		}
		b = b[pos:]
	}
	return w
}
