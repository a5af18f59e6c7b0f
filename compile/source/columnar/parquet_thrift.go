package columnar

import (
	"errors"
)

// errThriftShort is the error of a Thrift structure that goes on past the
// bytes given.
var errThriftShort = errors.New("page header goes on past the bytes read")

// thriftMaxDepth is how deep the Thrift library skips a value of a field
// it does not know: the value, and structures, lists, sets and maps 63
// deep in it.
const thriftMaxDepth = 64

// Thrift compact protocol types.
const (
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI16    = 4
	thriftI32    = 5
	thriftI64    = 6
	thriftDouble = 7
	thriftBinary = 8
	thriftList   = 9
	thriftSet    = 10
	thriftMap    = 11
	thriftStruct = 12
	thriftUUID   = 13
)

// thriftReader reads Thrift compact protocol from b: the page headers of
// a Parquet file, byte for byte as the Thrift library of arrow-go reads
// them, so that the pages checked are the pages arrow-go decodes. The
// first error sticks, and then every value reads as zero.
type thriftReader struct {
	b   []byte
	pos int
	err error
}

func (r *thriftReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *thriftReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail(errThriftShort)
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *thriftReader) uvarint() uint64 {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("page header: varint longer than 64 bits"))
	return 0
}

// i32 reads a zigzag varint of an i32 (or an i16): the Thrift library
// keeps the low 32 bits of the varint.
func (r *thriftReader) i32() int32 {
	v := uint32(r.uvarint())
	return int32(v>>1) ^ -int32(v&1)
}

// size reads the size of a binary, a list, a set or a map: a varint whose
// low 32 bits are the size, which must not be negative.
func (r *thriftReader) size() uint64 {
	n := int32(uint32(r.uvarint()))
	if n < 0 {
		r.fail(errors.New("page header: negative size"))
		return 0
	}
	return uint64(n)
}

// field reads the header of the next field of a structure whose field
// last was read last: its id and type, or stop at the end of the
// structure (a type of 0, whatever the id's delta).
func (r *thriftReader) field(last int16) (id int16, typ byte, stop bool) {
	c := r.byte()
	typ = c & 0x0f
	if typ == 0 || r.err != nil {
		return 0, 0, true
	}
	if delta := int16(c >> 4); delta != 0 {
		return last + delta, typ, false
	}
	return int16(r.i32()), typ, false
}

// boolField is the value of a field of type typ, a boolean.
func (r *thriftReader) boolField(typ byte) bool {
	return typ == thriftTrue
}

// skip reads past a value of type typ (a field's: a boolean field's value
// is in its type), and the values in it up to depth deep in all: 1 for the
// value alone, as the Thrift library's Skip counts.
func (r *thriftReader) skip(typ byte, depth int) {
	if depth <= 0 {
		r.fail(errors.New("page header: values nest too deep"))
		return
	}
	switch typ {
	case thriftTrue, thriftFalse:
	case thriftByte:
		r.byte()
	case thriftI16, thriftI32, thriftI64:
		r.uvarint()
	case thriftDouble:
		r.bytes(8)
	case thriftBinary:
		r.bytes(r.size())
	case thriftUUID:
		r.bytes(16)
	case thriftList, thriftSet:
		c := r.byte()
		n, elem := uint64(c>>4), c&0x0f
		if n == 15 {
			n = r.size()
		}
		if elem > thriftUUID {
			r.fail(errors.New("page header: unknown Thrift type"))
			return
		}
		r.elements(n, elem, depth)
	case thriftMap:
		n := r.size()
		if n == 0 {
			return
		}
		c := r.byte()
		for i := uint64(0); i < n && r.err == nil; i++ {
			r.element(c>>4, depth)
			r.element(c&0x0f, depth)
		}
	case thriftStruct:
		r.fields(depth - 1)
	default:
		r.fail(errors.New("page header: unknown Thrift type"))
	}
}

// fields reads past the fields of a structure, to its stop, skipping the
// value of each depth deep.
func (r *thriftReader) fields(depth int) {
	var last int16
	for {
		id, typ, stop := r.field(last)
		if stop {
			return
		}
		r.skip(typ, depth)
		last = id
	}
}

// elements reads past n elements of type typ of a list or a set.
func (r *thriftReader) elements(n uint64, typ byte, depth int) {
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.element(typ, depth)
	}
}

// element reads past an element of a list, a set or a map: a boolean is a
// byte of its own there.
func (r *thriftReader) element(typ byte, depth int) {
	if (typ == thriftTrue || typ == thriftFalse) && depth > 1 {
		r.byte()
		return
	}
	r.skip(typ, depth-1)
}

func (r *thriftReader) bytes(n uint64) {
	if r.err != nil {
		return
	}
	if n > uint64(len(r.b)-r.pos) {
		r.fail(errThriftShort)
		return
	}
	r.pos += int(n)
}
