package delta

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/lutkit/lutkit/format"
)

// maxColumns bounds the column count a SLOTS operation may name: a
// record header is read whole into memory.
const maxColumns = 1 << 16

// slotsParams are the parameters of a derived SLOTS range: where the
// target's DATA and MPHF sections are, its hash seed and column count,
// and which record a repeated key's slot points at.
type slotsParams struct {
	dataOff, dataLen uint64
	mphfOff, mphfLen uint64
	seed             uint64
	columns          uint64
	policy           byte
}

// deriveSlots computes the SLOTS section of a table of n rows from its
// DATA section (read from data, p.dataLen bytes) and its MPHF section:
// for every record in DATA order, its key's slot holds the record's
// offset and the key's fingerprint, as the compiler writes them. A key
// repeated in DATA keeps its first or last record (p.policy).
func deriveSlots(data io.Reader, mphf []byte, n uint64, p slotsParams) ([]byte, error) {
	if p.columns == 0 || p.columns > maxColumns {
		return nil, fmt.Errorf("SLOTS: %d columns", p.columns)
	}
	if p.policy != policyFirst && p.policy != policyLast {
		return nil, fmt.Errorf("SLOTS: unknown duplicate policy %d", p.policy)
	}
	f, err := format.ParseMPHF(mphf, n)
	if err != nil {
		return nil, fmt.Errorf("SLOTS: the target's MPHF: %w", err)
	}
	cols := int(p.columns)
	slots := make([]byte, 8*n)
	set := make([]uint64, (n+63)/64)
	br := bufio.NewReaderSize(io.LimitReader(data, int64(p.dataLen)), 1<<20)
	le := binary.LittleEndian
	var buf []byte
	for off := uint64(0); off < p.dataLen; {
		left := p.dataLen - off
		peek, err := br.Peek(2)
		if err != nil {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: %w", off, err)
		}
		wide := le.Uint16(peek) == format.WideMarker
		hdr := uint64(2 * (cols + 1))
		if wide {
			hdr = uint64(4 * (cols + 2))
		}
		if hdr > left {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: record header runs past DATA", off)
		}
		buf = grow(buf, int(hdr))
		if _, err := io.ReadFull(br, buf[:hdr]); err != nil {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: %w", off, err)
		}
		var size uint64
		if !wide {
			size = hdr + uint64(le.Uint16(buf)) + uint64(le.Uint16(buf[hdr-2:]))
		} else {
			size = hdr + uint64(le.Uint32(buf[4:])) + uint64(le.Uint32(buf[hdr-4:]))
		}
		padded := (size + format.RecordAlign - 1) &^ (format.RecordAlign - 1)
		if padded > left {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: a record of %d bytes runs past DATA", off, size)
		}
		buf = grow(buf, int(padded))
		if _, err := io.ReadFull(br, buf[hdr:padded]); err != nil {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: %w", off, err)
		}
		r, ok := format.ParseRecord(buf[:padded], 0, cols)
		if !ok {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: malformed record", off)
		}
		if n == 0 || off/format.RecordAlign > 0xffffffff {
			return nil, fmt.Errorf("SLOTS: DATA offset %d: a record no slot can address", off)
		}
		h := format.HashKey(r.Key(), p.seed)
		pos := f.Index(h)
		if p.policy == policyLast || set[pos/64]&(1<<(pos%64)) == 0 {
			le.PutUint64(slots[8*pos:], format.Slot(off, format.Fingerprint(h)))
			set[pos/64] |= 1 << (pos % 64)
		}
		off += padded
	}
	return slots, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}
