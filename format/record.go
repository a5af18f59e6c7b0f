package format

import (
	"encoding/binary"
	"slices"
)

// Record is a decoded view of one record of the DATA section. It aliases
// the bytes it was parsed from.
type Record struct {
	b    []byte // header, key and values (no padding)
	cols int
	hdr  int
	klen int
	wide bool
}

// ParseRecord parses the record at off in data, a DATA section of a table
// with cols columns. It checks that the record lies within data; it reports
// false for a record that does not.
func ParseRecord(data []byte, off uint64, cols int) (Record, bool) {
	var r Record
	if !r.Parse(data, off, cols) {
		return Record{}, false
	}
	return r, true
}

// Parse is ParseRecord into r, for lookups that fill a Record in place
// rather than copy one through several returns. When it reports false, r
// is left partly set and must not be used.
func (r *Record) Parse(data []byte, off uint64, cols int) bool {
	if off >= uint64(len(data)) {
		return false
	}
	b := data[off:]
	if len(b) < 2 {
		return false
	}
	le := binary.LittleEndian
	r.cols = cols
	var vlen int
	if k := le.Uint16(b); k != WideMarker {
		r.wide = false
		r.hdr = 2 * (cols + 1)
		if len(b) < r.hdr {
			return false
		}
		r.klen = int(k)
		vlen = int(le.Uint16(b[r.hdr-2:]))
	} else {
		r.wide = true
		r.hdr = 4 * (cols + 2)
		if len(b) < r.hdr {
			return false
		}
		r.klen = int(le.Uint32(b[4:]))
		vlen = int(le.Uint32(b[r.hdr-4:]))
	}
	n := uint64(r.hdr) + uint64(r.klen) + uint64(vlen)
	if cols == 0 {
		n = uint64(r.hdr) + uint64(r.klen)
	}
	if n > uint64(len(b)) {
		return false
	}
	r.b = b[:n]
	return true
}

// Key returns the record's normalised key.
func (r Record) Key() []byte { return r.b[r.hdr : r.hdr+r.klen] }

// Columns returns the number of values.
func (r Record) Columns() int { return r.cols }

// Size returns the record's size without padding.
func (r Record) Size() int { return len(r.b) }

// PaddedSize returns the record's size with padding.
func (r Record) PaddedSize() int { return (len(r.b) + RecordAlign - 1) &^ (RecordAlign - 1) }

// Bytes returns the record's bytes (header, key, values).
func (r Record) Bytes() []byte { return r.b }

// end returns the end offset of value i.
func (r Record) end(i int) int {
	if r.wide {
		return int(binary.LittleEndian.Uint32(r.b[4*(i+2):]))
	}
	return int(binary.LittleEndian.Uint16(r.b[2*(i+1):]))
}

// Value returns value i, or nil if i is out of range or the record's end
// offsets are inconsistent (a damaged file).
func (r *Record) Value(i int) []byte {
	if uint(i) >= uint(r.cols) {
		return nil
	}
	// ParseRecord checked that the header, which holds every end offset,
	// lies within b.
	b := r.b
	var start, end int
	if !r.wide {
		if i > 0 {
			start = int(binary.LittleEndian.Uint16(b[2*i:]))
		}
		end = int(binary.LittleEndian.Uint16(b[2*i+2:]))
	} else {
		if i > 0 {
			start = int(binary.LittleEndian.Uint32(b[4*i+4:]))
		}
		end = int(binary.LittleEndian.Uint32(b[4*i+8:]))
	}
	base := r.hdr + r.klen
	if start > end || base+end > len(b) {
		return nil
	}
	return b[base+start : base+end]
}

// Values returns the values, concatenated as stored: every value is a
// part of it.
func (r Record) Values() []byte { return r.b[r.hdr+r.klen:] }

// AppendValues appends every value to dst, as Value returns them, and
// returns the extended slice.
func (r Record) AppendValues(dst [][]byte) [][]byte {
	if r.cols == 0 {
		return dst
	}
	n := len(dst)
	dst = slices.Grow(dst, r.cols)[:n+r.cols]
	out, vals := dst[n:], r.Values()
	start := 0
	if r.wide {
		for i := range out {
			end := int(binary.LittleEndian.Uint32(r.b[4*(i+2):]))
			out[i] = part(vals, start, end)
			start = end
		}
		return dst
	}
	ends := r.b[2:r.hdr]
	for i := range out {
		end := int(binary.LittleEndian.Uint16(ends[2*i:]))
		out[i] = part(vals, start, end)
		start = end
	}
	return dst
}

// Ends16 returns the end offsets of a narrow record's values as stored:
// two bytes each, little-endian, value i ending at the offset at 2*i. It
// reports false for a wide record (see AppendEnds). The offsets are not
// checked: a caller must check that they do not decrease or run past
// Values.
func (r Record) Ends16() ([]byte, bool) {
	if r.wide || r.hdr < 2 {
		return nil, false
	}
	return r.b[2:r.hdr], true
}

// AppendEnds appends the end offset of every value within Values to dst
// and returns the extended slice: value i is Values()[end(i-1):end(i)].
// It reports false, with dst unchanged, when the offsets decrease or run
// past the values (a damaged record), where AppendValues gives nil values.
func (r Record) AppendEnds(dst []int32) ([]int32, bool) {
	n, nv := len(dst), len(r.b)-r.hdr-r.klen
	dst = slices.Grow(dst, r.cols)[:n+r.cols]
	out, prev := dst[n:], 0
	if r.wide {
		for i := range out {
			end := int(binary.LittleEndian.Uint32(r.b[4*(i+2):]))
			if end < prev || end > nv {
				return dst[:n], false
			}
			out[i], prev = int32(end), end
		}
		return dst, true
	}
	ends := r.b[2:r.hdr]
	for i := range out {
		end := int(binary.LittleEndian.Uint16(ends[2*i:]))
		if end < prev || end > nv {
			return dst[:n], false
		}
		out[i], prev = int32(end), end
	}
	return dst, true
}

// part returns vals[start:end], or nil if that is not a part of vals.
func part(vals []byte, start, end int) []byte {
	if start > end || end > len(vals) {
		return nil
	}
	return vals[start:end]
}

// Valid reports whether the end offsets are non-decreasing, so that every
// Value is well defined. Verify checks it for every record.
func (r Record) Valid() bool {
	prev := 0
	for i := 0; i < r.cols; i++ {
		e := r.end(i)
		if e < prev {
			return false
		}
		prev = e
	}
	return true
}

// Clone returns a Record backed by a copy of its bytes appended to buf, and
// the grown buf. The result aliases buf.
func (r Record) Clone(buf []byte) (Record, []byte) {
	start := len(buf)
	buf = append(buf, r.b...)
	r.b = buf[start:]
	return r, buf
}
