package mmdb

import (
	"errors"
	"fmt"
	"math"

	damage "github.com/lutkit/lutkit/internal/corrupt"
)

// Kind is the type of one value in an MMDB data or metadata section. The
// numbers are those of the MaxMind DB format specification.
type Kind uint8

// The MaxMind DB data types. KindInvalid (0) marks a Value that was not found.
const (
	KindInvalid Kind = 0
	KindPointer Kind = 1
	KindString  Kind = 2
	KindDouble  Kind = 3
	KindBytes   Kind = 4
	KindUint16  Kind = 5
	KindUint32  Kind = 6
	KindMap     Kind = 7
	KindInt32   Kind = 8
	KindUint64  Kind = 9
	KindUint128 Kind = 10
	KindArray   Kind = 11
	KindBool    Kind = 14
	KindFloat   Kind = 15
)

var kindNames = [...]string{
	KindInvalid: "invalid", KindPointer: "pointer", KindString: "string",
	KindDouble: "double", KindBytes: "bytes", KindUint16: "uint16",
	KindUint32: "uint32", KindMap: "map", KindInt32: "int32",
	KindUint64: "uint64", KindUint128: "uint128", KindArray: "array",
	12: "container", 13: "end marker", KindBool: "boolean", KindFloat: "float",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// maxDepth is the deepest nesting readers accept (libmaxminddb and
// maxminddb-golang both stop at 512).
const maxDepth = 512

var errDepth = errors.New("exceeded maximum data structure depth")

// ErrCorrupt is the corruption marker every error about a damaged file
// unwraps to: errors.Is(err, ErrCorrupt). It is the same value as
// format.ErrCorrupt.
var ErrCorrupt = damage.ErrCorrupt

// CorruptError reports malformed data at an offset of a data or metadata
// section (the same type as format.CorruptError).
type CorruptError = damage.Error

func corrupt(off uint, format string, args ...any) error {
	return damage.At("MMDB section", int64(off), format, args...)
}

// section is one data (or metadata) section. Offsets are relative to its
// start, as are pointers.
type section []byte

// ctrl decodes the control byte(s) at off. For a pointer it returns the
// target in size and the offset after the pointer in data. For other kinds
// size is the payload size (pairs for maps, elements for arrays, the value
// for booleans) and data is where the payload starts.
func (s section) ctrl(off uint) (kind Kind, size, data uint, err error) {
	n := uint(len(s))
	if off >= n {
		return 0, 0, 0, corrupt(off, "offset past end of section (%d bytes)", n)
	}
	b := s[off]
	kind = Kind(b >> 5)
	off++
	if kind == KindPointer {
		ss := uint(b>>3) & 3
		v := uint(b & 7)
		switch ss {
		case 0:
			if off+1 > n {
				return 0, 0, 0, corrupt(off, "truncated pointer")
			}
			size = v<<8 | uint(s[off])
			off++
		case 1:
			if off+2 > n {
				return 0, 0, 0, corrupt(off, "truncated pointer")
			}
			size = (v<<16 | uint(s[off])<<8 | uint(s[off+1])) + 2048
			off += 2
		case 2:
			if off+3 > n {
				return 0, 0, 0, corrupt(off, "truncated pointer")
			}
			size = (v<<24 | uint(s[off])<<16 | uint(s[off+1])<<8 | uint(s[off+2])) + 526336
			off += 3
		default:
			if off+4 > n {
				return 0, 0, 0, corrupt(off, "truncated pointer")
			}
			size = uint(s[off])<<24 | uint(s[off+1])<<16 | uint(s[off+2])<<8 | uint(s[off+3])
			off += 4
		}
		return KindPointer, size, off, nil
	}
	if kind == 0 {
		if off >= n {
			return 0, 0, 0, corrupt(off, "truncated extended type")
		}
		ext := uint(s[off]) + 7
		off++
		if ext < 8 || ext > uint(KindFloat) || ext == 12 || ext == 13 {
			return 0, 0, 0, corrupt(off-2, "invalid extended type %d", ext)
		}
		kind = Kind(ext)
	}
	size = uint(b & 0x1f)
	switch size {
	case 29:
		if off+1 > n {
			return 0, 0, 0, corrupt(off, "truncated size")
		}
		size = 29 + uint(s[off])
		off++
	case 30:
		if off+2 > n {
			return 0, 0, 0, corrupt(off, "truncated size")
		}
		size = 285 + (uint(s[off])<<8 | uint(s[off+1]))
		off += 2
	case 31:
		if off+3 > n {
			return 0, 0, 0, corrupt(off, "truncated size")
		}
		size = 65821 + (uint(s[off])<<16 | uint(s[off+1])<<8 | uint(s[off+2]))
		off += 3
	}
	switch kind {
	case KindMap, KindArray:
		// Every entry takes at least one byte: a cheap plausibility check
		// that stops absurd counts before any loop runs.
		if size > n-off {
			return 0, 0, 0, corrupt(off, "%s of %d entries exceeds the section", kind, size)
		}
	case KindBool:
		if size > 1 {
			return 0, 0, 0, corrupt(off, "invalid boolean size %d", size)
		}
	default:
		if size > n-off {
			return 0, 0, 0, corrupt(off, "%s of %d bytes exceeds the section", kind, size)
		}
		if lim := &scalarSizes[kind&15]; size < lim[0] || size > lim[1] {
			return 0, 0, 0, corrupt(off, "%v", scalarSizeError(kind, size))
		}
	}
	return kind, size, off, nil
}

// scalarSizes holds the smallest and largest payload size of each kind:
// exactly 8 and 4 bytes for doubles and floats, at most the width of the
// unsigned and signed integers, and any 32-bit size for the rest.
var scalarSizes = func() (t [16][2]uint) {
	for k := range t {
		t[k] = [2]uint{0, math.MaxUint32}
	}
	t[KindDouble], t[KindFloat] = [2]uint{8, 8}, [2]uint{4, 4}
	t[KindUint16], t[KindUint32], t[KindInt32] = [2]uint{0, 2}, [2]uint{0, 4}, [2]uint{0, 4}
	t[KindUint64], t[KindUint128] = [2]uint{0, 8}, [2]uint{0, 16}
	return t
}()

func scalarSizeError(k Kind, size uint) error {
	switch k {
	case KindDouble:
		return fmt.Errorf("invalid double size %d", size)
	case KindFloat:
		return fmt.Errorf("invalid float size %d", size)
	}
	return fmt.Errorf("invalid %s size %d", k, size)
}

// resolve follows a pointer at off, if there is one. It returns the value's
// kind, size and payload offset, and next, the offset after the item at
// off (after the pointer, not after its target).
func (s section) resolve(off uint) (kind Kind, size, data, next uint, err error) {
	kind, size, data, err = s.ctrl(off)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if kind != KindPointer {
		next, err = s.end(kind, size, data, 0)
		return kind, size, data, next, err
	}
	next = data
	target := size
	kind, size, data, err = s.ctrl(target)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if kind == KindPointer {
		return 0, 0, 0, 0, corrupt(off, "pointer to a pointer")
	}
	return kind, size, data, next, nil
}

// end returns the offset after a value whose control bytes were decoded.
// Containers are skipped entry by entry.
func (s section) end(kind Kind, size, data uint, depth int) (uint, error) {
	switch kind {
	case KindMap:
		return s.skipN(data, 2*size, depth+1)
	case KindArray:
		return s.skipN(data, size, depth+1)
	case KindBool:
		return data, nil
	default:
		return data + size, nil
	}
}

// skipN skips count items starting at off (pointers are skipped, not
// followed).
func (s section) skipN(off, count uint, depth int) (uint, error) {
	if depth > maxDepth {
		return 0, errDepth
	}
	for ; count > 0; count-- {
		kind, size, data, err := s.ctrl(off)
		if err != nil {
			return 0, err
		}
		if kind == KindPointer {
			off = data
			continue
		}
		off, err = s.end(kind, size, data, depth)
		if err != nil {
			return 0, err
		}
	}
	return off, nil
}

// key reads a map key at off: a string, or a pointer to one. It returns the
// key bytes (aliasing the section) and the offset of the value.
func (s section) key(off uint) ([]byte, uint, error) {
	kind, size, data, next, err := s.resolve(off)
	if err != nil {
		return nil, 0, err
	}
	if kind != KindString {
		return nil, 0, corrupt(off, "map key is a %s, not a string", kind)
	}
	return s[data : data+size], next, nil
}

func (s section) uint(data, size uint) uint64 {
	var v uint64
	for _, b := range s[data : data+size] {
		v = v<<8 | uint64(b)
	}
	return v
}

// uint128 returns the high and low words of a uint128 payload.
func (s section) uint128(data, size uint) (hi, lo uint64) {
	for _, b := range s[data : data+size] {
		hi = hi<<8 | lo>>56
		lo = lo<<8 | uint64(b)
	}
	return hi, lo
}

// itemLen[b] is the length of an item whose control byte is b, when that
// byte alone gives it and the item is valid as far as its size goes: a
// pointer (the pointer itself, not its target), or a string, bytes, double
// or 16- or 32-bit unsigned integer of a size below 29 that its kind
// allows. It is 0 for the rest (maps, extended types, longer sizes), which
// ctrl decodes.
var itemLen = func() (t [256]uint8) {
	for b := range t {
		kind, size := Kind(b>>5), uint(b&0x1f)
		switch kind {
		case KindPointer:
			t[b] = uint8(2 + (b>>3)&3)
		case KindString, KindDouble, KindBytes, KindUint16, KindUint32:
			if lim := scalarSizes[kind]; size < 29 && size >= lim[0] && size <= lim[1] {
				t[b] = uint8(1 + size)
			}
		}
	}
	return t
}()

// pointer returns the target of the pointer at off, whose control byte b
// is, and whose itemLen(b) bytes the section holds.
func (s section) pointer(off uint, b byte) uint {
	v := uint(b & 7)
	switch (b >> 3) & 3 {
	case 0:
		return v<<8 | uint(s[off+1])
	case 1:
		return (v<<16 | uint(s[off+1])<<8 | uint(s[off+2])) + 2048
	case 2:
		return (v<<24 | uint(s[off+1])<<16 | uint(s[off+2])<<8 | uint(s[off+3])) + 526336
	}
	return uint(s[off+1])<<24 | uint(s[off+2])<<16 | uint(s[off+3])<<8 | uint(s[off+4])
}
