package format

import (
	"encoding/binary"
	"slices"
)

// Record is a decoded view of one record of the DATA section. It aliases
// the bytes it was parsed from.
//
// It is 32 bytes of at most four fields, so that the compiler keeps one in
// registers rather than copying it through memory: lookups pass Records
// around by value.
type Record struct {
	b    []byte // header, key and values (no padding)
	cols uint32
	vals uint32 // start of the values (the end of the key); wideBit for a wide record
}

// wideBit marks a wide record in Record.vals; the values of a record must
// start below it (2 GiB into the record), which ParseRecord checks.
const wideBit = 1 << 31

func (r Record) ncols() int    { return int(r.cols) }
func (r Record) isWide() bool  { return r.vals&wideBit != 0 }
func (r Record) valStart() int { return int(r.vals &^ wideBit) }
func (r Record) keyStart() int { return RecordHeaderSize(int(r.cols), r.isWide()) }

// maxRecordColumns bounds the column count ParseRecord accepts, so that a
// record's header size cannot overflow an int on any platform. (A table
// of more columns would have a schema of more than a gigabyte.)
const maxRecordColumns = 1 << 28

// ParseRecord parses the record at off in data, a DATA section of a table
// with cols columns. It checks that the record lies within data; it reports
// false for a record that does not, and for cols beyond 2^28. (The Record
// is returned in registers: lookups call it rather than Parse.)
func ParseRecord(data []byte, off uint64, cols int) (Record, bool) {
	if off >= uint64(len(data)) || uint(cols) > maxRecordColumns {
		return Record{}, false
	}
	b := data[off:]
	if len(b) < 2 {
		return Record{}, false
	}
	le := binary.LittleEndian
	if k := le.Uint16(b); k != WideMarker {
		hdr := 2 * (cols + 1)
		if uint(len(b)) < uint(hdr) {
			return Record{}, false
		}
		vals := hdr + int(k)
		n := vals
		if cols > 0 {
			n += int(le.Uint16(b[hdr-2 : hdr]))
		}
		if uint(n) > uint(len(b)) || uint64(vals) >= wideBit {
			return Record{}, false
		}
		return Record{b: b[:n], cols: uint32(cols), vals: uint32(vals)}, true
	}
	hdr := 4 * (cols + 2)
	if uint(len(b)) < uint(hdr) {
		return Record{}, false
	}
	klen := uint64(le.Uint32(b[4:8]))
	n := uint64(hdr) + klen
	if cols > 0 {
		n += uint64(le.Uint32(b[hdr-4 : hdr]))
	}
	vals := uint64(hdr) + klen
	if n > uint64(len(b)) || vals >= wideBit {
		return Record{}, false
	}
	return Record{b: b[:n], cols: uint32(cols), vals: uint32(vals) | wideBit}, true
}

// Parse is ParseRecord into r. When it reports false, r is the zero
// Record.
func (r *Record) Parse(data []byte, off uint64, cols int) bool {
	var ok bool
	*r, ok = ParseRecord(data, off, cols)
	return ok
}

// Key returns the record's normalised key.
func (r Record) Key() []byte { return r.b[r.keyStart():r.valStart()] }

// Columns returns the number of values.
func (r Record) Columns() int { return r.ncols() }

// Size returns the record's size without padding.
func (r Record) Size() int { return len(r.b) }

// PaddedSize returns the record's size with padding.
func (r Record) PaddedSize() int { return (len(r.b) + RecordAlign - 1) &^ (RecordAlign - 1) }

// Bytes returns the record's bytes (header, key, values).
func (r Record) Bytes() []byte { return r.b }

// end returns the end offset of value i.
func (r Record) end(i int) int {
	if r.isWide() {
		return int(binary.LittleEndian.Uint32(r.b[4*(i+2):]))
	}
	return int(binary.LittleEndian.Uint16(r.b[2*(i+1):]))
}

// Value returns value i, or nil if i is out of range or the record's end
// offsets are inconsistent (a damaged file).
func (r Record) Value(i int) []byte {
	b := r.b
	if r.vals&wideBit != 0 || uint(i) >= uint(r.cols) {
		return r.wideValue(i)
	}
	// ParseRecord checked that the header, which holds every end offset,
	// and the start of the values lie within b. The four bytes at 2*i are
	// the end of value i-1 (for i = 0, the key length instead) and the end
	// of value i.
	w := binary.LittleEndian.Uint32(b[2*i : 2*i+4])
	start, end := uint(w&0xffff), uint(w>>16)
	if i == 0 {
		start = 0
	}
	start += uint(r.vals)
	end += uint(r.vals)
	if start > end || end > uint(len(b)) {
		return nil
	}
	return b[start:end]
}

// wideValue is Value for a wide record, and for an i out of range.
func (r Record) wideValue(i int) []byte {
	if uint(i) >= uint(r.cols) {
		return nil
	}
	b := r.b
	var start uint
	if i > 0 {
		start = uint(binary.LittleEndian.Uint32(b[4*i+4:]))
	}
	end := uint(binary.LittleEndian.Uint32(b[4*i+8:]))
	v := b[r.valStart():]
	if start > end || end > uint(len(v)) {
		return nil
	}
	return v[start:end]
}

// Values returns the values, concatenated as stored: every value is a
// part of it.
func (r Record) Values() []byte { return r.b[r.valStart():] }

// AppendValues appends every value to dst, as Value returns them, and
// returns the extended slice.
func (r Record) AppendValues(dst [][]byte) [][]byte {
	if r.ncols() == 0 {
		return dst
	}
	n := len(dst)
	dst = slices.Grow(dst, r.ncols())[:n+r.ncols()]
	out, vals := dst[n:], r.Values()
	start := 0
	if r.isWide() {
		for i := range out {
			end := int(binary.LittleEndian.Uint32(r.b[4*(i+2):]))
			out[i] = part(vals, start, end)
			start = end
		}
		return dst
	}
	ends := r.b[2:r.keyStart()]
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
	if r.isWide() || r.keyStart() < 2 {
		return nil, false
	}
	return r.b[2:r.keyStart()], true
}

// AppendEnds appends the end offset of every value within Values to dst
// and returns the extended slice: value i is Values()[end(i-1):end(i)].
// It reports false, with dst unchanged, when the offsets decrease or run
// past the values (a damaged record), where AppendValues gives nil values.
func (r Record) AppendEnds(dst []int32) ([]int32, bool) {
	n, nv := len(dst), len(r.b)-r.valStart()
	dst = slices.Grow(dst, r.ncols())[:n+r.ncols()]
	out, prev := dst[n:], 0
	if r.isWide() {
		for i := range out {
			end := int(binary.LittleEndian.Uint32(r.b[4*(i+2):]))
			if end < prev || end > nv {
				return dst[:n], false
			}
			out[i], prev = int32(end), end
		}
		return dst, true
	}
	ends := r.b[2:r.keyStart()]
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
	for i := 0; i < r.ncols(); i++ {
		e := r.end(i)
		if e < prev {
			return false
		}
		prev = e
	}
	return true
}

// Rebased returns r reading its bytes from b, a copy of Bytes (it panics
// if b is shorter).
func (r Record) Rebased(b []byte) Record { r.b = b[:len(r.b)]; return r }

// Clone returns a Record backed by a copy of its bytes appended to buf, and
// the grown buf. The result aliases buf.
func (r Record) Clone(buf []byte) (Record, []byte) {
	start := len(buf)
	buf = append(buf, r.b...)
	r.b = buf[start:]
	return r, buf
}
