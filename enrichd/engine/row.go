package engine

import (
	"encoding/binary"
	"slices"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/reader"
)

// appendRow appends event i's row as an object of every column.
//
// The common case, a row none of whose values needs escaping (one check
// over all of them), copies each key and each value with fixed-size moves:
// a key as its padded array, a value as the rowValPad bytes from its start
// (the mapping goes on after the row, so they can be read; what is copied
// too much, the next key or value overwrites). A row with a byte to escape
// is encoded value by value.
func (rw *ruleWork) appendRow(buf []byte, i int) []byte {
	v := rw.views[i]
	values := v.Values()
	// The end offsets: read straight from the record when they are 16-bit
	// (checked below as they are used), else checked and widened first.
	e16, narrow := v.Ends16()
	ends, cols := rw.ends[:0], len(e16)/2
	if !narrow {
		var ok bool
		if ends, ok = v.Ends(ends); !ok {
			return rw.appendRowEsc(buf, v) // a damaged row's bad values are empty
		}
		rw.ends, cols = ends, len(ends)
	}
	keys := rw.rowKeys[:min(len(rw.rowKeys), cols)]
	if len(keys) == 0 {
		return append(buf, '{', '}')
	}
	if parse.NeedsEscape(values) {
		return rw.appendRowEsc(buf, v)
	}
	mark := len(buf)
	buf = slices.Grow(buf, len(values)+rw.keysRoom+rowValPad)
	b := buf[:cap(buf)]
	l := len(buf)
	room := values[:cap(values)]
	start := 0
	for j := range keys {
		k := &keys[j]
		if len(k.b) <= rowKeyPad {
			*(*[rowKeyPad]byte)(b[l:]) = k.pad
		} else {
			copy(b[l:], k.b)
		}
		l += len(k.b)
		var end int
		if narrow {
			end = int(binary.LittleEndian.Uint16(e16[2*j:]))
		} else {
			end = int(ends[j])
		}
		if end < start || end > len(values) {
			return rw.appendRowEsc(buf[:mark], v) // damaged
		}
		if end-start <= rowValPad && start+rowValPad <= len(room) {
			copy32(b[l:], room[start:])
		} else {
			copy(b[l:], values[start:end])
		}
		l += end - start
		start = end
	}
	return append(buf[:l], '"', '}')
}

// rowValPad is how many bytes appendRow moves for a value at once.
const rowValPad = 32

// copy32 copies the first 32 bytes of src to dst, as four words: an array
// copy would call memmove, as src and dst might overlap.
func copy32(dst, src []byte) {
	src, dst = src[:32], dst[:32]
	le := binary.LittleEndian
	a0, a1, a2, a3 := le.Uint64(src), le.Uint64(src[8:]), le.Uint64(src[16:]), le.Uint64(src[24:])
	le.PutUint64(dst, a0)
	le.PutUint64(dst[8:], a1)
	le.PutUint64(dst[16:], a2)
	le.PutUint64(dst[24:], a3)
}

// appendRowEsc is appendRow for a row with values to escape, or a damaged
// one.
func (rw *ruleWork) appendRowEsc(buf []byte, v reader.View) []byte {
	rw.vals = v.Cols(rw.vals[:0])
	n := min(len(rw.rowKeys), len(rw.vals))
	for j, val := range rw.vals[:n] {
		buf = append(buf, rw.rowKeys[j].b...)
		buf = parse.AppendEscaped(buf, val)
	}
	return append(buf, '"', '}')
}

// rowKeyPad is the size of rowKey.pad.
const rowKeyPad = 32

// rowKey is what precedes a column's value in the object of a whole row:
// `{"col":"` for the first column, then `","col":"`. pad holds it too when
// it fits, so that it can be copied with a fixed-size move.
type rowKey struct {
	b   []byte
	pad [rowKeyPad]byte
}
