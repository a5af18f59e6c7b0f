// Package rowjson writes a row of a .lut table as a JSON object: its
// column names as keys, in column order, and its values as strings,
// escaped by jsonstr, but for the columns the table types (number, bool,
// json: format.ColumnType), whose values are written as they are stored,
// unquoted, and an empty one as null. It is the one row encoder of the project: lut get,
// lut export --format jsonl, enrichd's lookup API and memcached listener
// and the enrichment engine all write a row with it, so a row has the same
// bytes everywhere.
//
// An Encoder, made once for a table's columns, is the fast way: a row none
// of whose values needs escaping (one check over all of them) is copied
// key by key and value by value with fixed-size moves. Append encodes a
// row without one, for callers that look rows up in any table and must
// not allocate.
package rowjson

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader"
)

// Append appends v, a row of a table with columns of types (nil: all
// text, as reader.Table.ColumnTypes gives them), as a JSON object. It
// writes what Encoder.Append does, escaping each key as it goes; it does
// not allocate when dst has room.
func Append(dst []byte, columns []string, types []format.ColumnType, v reader.View) []byte {
	dst = append(dst, '{')
	for i, c := range columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.AppendKeyS(dst, c)
		if types == nil {
			dst = jsonstr.AppendString(dst, v.Col(i))
		} else {
			dst = AppendValue(dst, types[i], v.Col(i))
		}
	}
	return append(dst, '}')
}

// AppendValue appends val, a value of a column of type t, as JSON: a
// text value as a string; a number, bool or json value as it is stored,
// and an empty one as null. A typed value that is not valid for its type
// (the compiler checks them, so only a damaged file holds one) is written
// as a string, so that the output stays valid JSON.
func AppendValue(dst []byte, t format.ColumnType, val []byte) []byte {
	if t == format.TypeText {
		return jsonstr.AppendString(dst, val)
	}
	if len(val) == 0 {
		return append(dst, "null"...)
	}
	if !format.ValidValue(t, val) {
		return jsonstr.AppendString(dst, val)
	}
	return append(dst, val...)
}

// keyPad is the size of key.pad.
const keyPad = 32

// valPad is how many bytes Append moves for a short value at once.
const valPad = 32

// key is what precedes a column's value in a row's object: `{"col":"` for
// the first column, then `","col":"`. pad holds it too when it fits, so
// that it can be copied with a fixed-size move.
type key struct {
	b   []byte
	pad [keyPad]byte
	n   int // len(b)
}

// Encoder writes the rows of one table. It keeps scratch memory: use one
// per goroutine.
type Encoder struct {
	keys []key
	// keysRoom is the room the keys of a row take in Append: each at
	// least keyPad bytes.
	keysRoom int
	// shortKeys is set when every key fits its pad.
	shortKeys bool
	ends      []int32  // scratch for a row's value ends
	vals      [][]byte // scratch for a row's values
	// types is the type of each column when some column is not text
	// (else nil), and tkeys what precedes each value then: `{"col":`,
	// then `,"col":`.
	types []format.ColumnType
	tkeys [][]byte
}

// NewEncoder returns an encoder for rows with columns of types (nil: all
// text, as reader.Table.ColumnTypes gives them).
func NewEncoder(columns []string, types []format.ColumnType) *Encoder {
	e := &Encoder{}
	e.Reset(columns, types)
	return e
}

// Reset makes e an encoder for rows with columns of types, reusing its
// memory.
func (e *Encoder) Reset(columns []string, types []format.ColumnType) {
	e.types, e.tkeys = nil, e.tkeys[:0]
	if (&format.Schema{Types: types}).Typed() && len(types) == len(columns) {
		e.types = types
		for j, c := range columns {
			k := []byte{','}
			if j == 0 {
				k = []byte{'{'}
			}
			e.tkeys = append(e.tkeys, jsonstr.AppendKeyS(k, c))
		}
	}
	e.keys, e.keysRoom, e.shortKeys = e.keys[:0], 0, true
	for j, c := range columns {
		k := []byte(`",`)
		if j == 0 {
			k = []byte{'{'}
		}
		k = append(jsonstr.AppendKeyS(k, c), '"')
		e.keys = append(e.keys, key{b: k, n: len(k)})
		copy(e.keys[j].pad[:], k)
		e.keysRoom += max(len(k), keyPad)
		e.shortKeys = e.shortKeys && len(k) <= keyPad
	}
	e.vals = slices.Grow(e.vals[:0], len(e.keys))
}

// Append appends the row v as a JSON object of every column.
//
// The common case, a row none of whose values needs escaping (one check
// over all of them), copies each key and each value with fixed-size moves:
// a key as its padded array, a value as the valPad bytes from its start
// (the mapping goes on after the row, so they can be read; what is copied
// too much, the next key or value overwrites). A row with a byte to escape
// is encoded value by value.
//
// When the mapping has 2*valPad bytes past the values and every key fits
// its pad (the rows of a table but its last few), a value of up to
// 2*valPad bytes is copied with one or two moves and checked with two
// compares: its end is at most the values' end, and its length, taken
// unsigned, is at most the move (which also catches an end before its
// start).
func (e *Encoder) Append(buf []byte, v reader.View) []byte {
	if e.types != nil {
		return e.appendTyped(buf, v)
	}
	values := v.Values()
	// The end offsets: read straight from the record when they are 16-bit
	// (checked below as they are used), else checked and widened first.
	e16, narrow := v.Ends16()
	if !narrow {
		return e.appendWide(buf, v, values)
	}
	keys := e.keys[:min(len(e.keys), len(e16)/2)]
	if len(keys) == 0 {
		return append(buf, '{', '}')
	}
	if jsonstr.NeedsEscape(values) {
		return e.appendEsc(buf, v)
	}
	mark := len(buf)
	buf = slices.Grow(buf, len(values)+e.keysRoom+2*valPad)
	b := buf[:cap(buf)]
	// The moves below go through pointers: the room Grow made holds every
	// key padded, every value and 2*valPad past the last, and a value is
	// read valPad bytes at a time only where room has them.
	dst := unsafe.Pointer(unsafe.SliceData(b))
	room := values[:cap(values)]
	src := unsafe.Pointer(unsafe.SliceData(room))
	endp := unsafe.Pointer(unsafe.SliceData(e16))
	nv, nroom := len(values), len(room)
	l, start := len(buf), 0
	if e.shortKeys && nroom-nv >= 2*valPad {
		for j := range keys {
			k := &keys[j]
			*(*[keyPad]byte)(unsafe.Add(dst, l)) = k.pad
			l += k.n
			ep := (*[2]byte)(unsafe.Add(endp, 2*j))
			end := int(ep[0]) | int(ep[1])<<8
			if end > nv {
				return e.appendEsc(buf[:mark], v) // damaged
			}
			// start <= nv: the reads below end within room.
			switch n := end - start; {
			case uint(n) <= valPad:
				copy32(unsafe.Add(dst, l), unsafe.Add(src, start))
			case uint(n) <= 2*valPad:
				copy32(unsafe.Add(dst, l), unsafe.Add(src, start))
				copy32(unsafe.Add(dst, l+valPad), unsafe.Add(src, start+valPad))
			case n < 0:
				return e.appendEsc(buf[:mark], v) // damaged
			default:
				copy(b[l:], values[start:end])
			}
			l += end - start
			start = end
		}
		return append(buf[:l], '"', '}')
	}
	for j := range keys {
		k := &keys[j]
		if len(k.b) <= keyPad {
			*(*[keyPad]byte)(unsafe.Add(dst, l)) = k.pad
		} else {
			copy(b[l:], k.b)
		}
		l += len(k.b)
		ep := (*[2]byte)(unsafe.Add(endp, 2*j))
		end := int(ep[0]) | int(ep[1])<<8
		if end < start || end > nv {
			return e.appendEsc(buf[:mark], v) // damaged
		}
		if end-start <= valPad && start+valPad <= nroom {
			copy32(unsafe.Add(dst, l), unsafe.Add(src, start))
		} else {
			copy(b[l:], values[start:end])
		}
		l += end - start
		start = end
	}
	return append(buf[:l], '"', '}')
}

// appendWide is Append for a row whose value ends are 32-bit (a record of
// 64 KiB or more).
func (e *Encoder) appendWide(buf []byte, v reader.View, values []byte) []byte {
	ends, ok := v.Ends(e.ends[:0])
	if !ok {
		return e.appendEsc(buf, v) // a damaged row's bad values are empty
	}
	e.ends = ends
	keys := e.keys[:min(len(e.keys), len(ends))]
	if len(keys) == 0 {
		return append(buf, '{', '}')
	}
	if jsonstr.NeedsEscape(values) {
		return e.appendEsc(buf, v)
	}
	mark := len(buf)
	buf = slices.Grow(buf, len(values)+e.keysRoom+valPad)
	b := buf[:cap(buf)]
	l := len(buf)
	room := values[:cap(values)]
	start := 0
	for j := range keys {
		k := &keys[j]
		if len(k.b) <= keyPad {
			*(*[keyPad]byte)(b[l:]) = k.pad
		} else {
			copy(b[l:], k.b)
		}
		l += len(k.b)
		end := int(ends[j])
		if end < start || end > len(values) {
			return e.appendEsc(buf[:mark], v) // damaged
		}
		if end-start <= valPad && start+valPad <= len(room) {
			Copy32(b[l:], room[start:])
		} else {
			copy(b[l:], values[start:end])
		}
		l += end - start
		start = end
	}
	return append(buf[:l], '"', '}')
}

// appendEsc is Append for a row with values to escape, or a damaged one.
func (e *Encoder) appendEsc(buf []byte, v reader.View) []byte {
	e.vals = v.Cols(e.vals[:0])
	n := min(len(e.keys), len(e.vals))
	if n == 0 {
		return append(buf, '{', '}')
	}
	for j, val := range e.vals[:n] {
		buf = append(buf, e.keys[j].b...)
		buf = jsonstr.AppendEscaped(buf, val)
	}
	return append(buf, '"', '}')
}

// appendTyped is Append for a table with typed columns: value by value.
func (e *Encoder) appendTyped(buf []byte, v reader.View) []byte {
	e.vals = v.Cols(e.vals[:0])
	n := min(len(e.tkeys), len(e.vals))
	if n == 0 {
		return append(buf, '{', '}')
	}
	for j, val := range e.vals[:n] {
		buf = append(buf, e.tkeys[j]...)
		buf = AppendValue(buf, e.types[j], val)
	}
	return append(buf, '}')
}

// copy32 is Copy32 through pointers, without bounds checks: dst and src
// must each have 32 bytes.
func copy32(dst, src unsafe.Pointer) {
	le := binary.LittleEndian
	d, s := (*[32]byte)(dst), (*[32]byte)(src)
	a0, a1, a2, a3 := le.Uint64(s[:]), le.Uint64(s[8:]), le.Uint64(s[16:]), le.Uint64(s[24:])
	le.PutUint64(d[:], a0)
	le.PutUint64(d[8:], a1)
	le.PutUint64(d[16:], a2)
	le.PutUint64(d[24:], a3)
}

// Copy32 copies the first 32 bytes of src to dst, as four words: an array
// copy would call memmove, as src and dst might overlap.
func Copy32(dst, src []byte) {
	src, dst = src[:32], dst[:32]
	le := binary.LittleEndian
	a0, a1, a2, a3 := le.Uint64(src), le.Uint64(src[8:]), le.Uint64(src[16:]), le.Uint64(src[24:])
	le.PutUint64(dst, a0)
	le.PutUint64(dst[8:], a1)
	le.PutUint64(dst[16:], a2)
	le.PutUint64(dst[24:], a3)
}
