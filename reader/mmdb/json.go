package mmdb

import (
	"encoding/base64"
	"math"
	"math/bits"
	"net/netip"
	"strconv"

	"github.com/lutkit/lutkit/internal/jsonstr"
)

// maxJSON bounds the JSON of one record, so that a damaged file whose
// pointers make a record refer to itself cannot make an answer grow
// without end.
const maxJSON = 1 << 20

// AppendRecordJSON looks ip up and appends its whole record as JSON: maps
// as objects (keys in stored order), arrays, strings (escaped by jsonstr,
// as every JSON of the project), numbers and booleans; bytes as base64
// strings and non-finite floats as null, as encoding/json writes them. For an address that is not found it appends nothing. It
// does not allocate beyond growing dst.
func (r *Reader) AppendRecordJSON(dst []byte, ip netip.Addr) ([]byte, Match, error) {
	if r.db == nil {
		return dst, Match{}, errClosed
	}
	m, err := r.lookup(ip)
	if err != nil || !m.found {
		return dst, m, err
	}
	start := len(dst)
	dst, _, err = r.data.appendJSON(dst, m.offset, 0, start)
	if err != nil {
		return dst[:start], Match{}, err
	}
	return dst, m, nil
}

// appendJSON appends the value at off and returns the offset after it (for
// a pointer: after the pointer, not its target).
func (s section) appendJSON(dst []byte, off uint, depth, start int) ([]byte, uint, error) {
	if depth > maxDepth {
		return dst, 0, errDepth
	}
	if len(dst)-start > maxJSON {
		return dst, 0, corrupt(off, "record is larger than %d bytes as JSON", maxJSON)
	}
	kind, size, data, err := s.ctrl(off)
	if err != nil {
		return dst, 0, err
	}
	switch kind {
	case KindPointer:
		dst, _, err = s.appendJSON(dst, size, depth+1, start)
		return dst, data, err
	case KindMap:
		dst = append(dst, '{')
		p := data
		for i := uint(0); i < size; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, v, err := s.key(p)
			if err != nil {
				return dst, 0, err
			}
			dst = jsonstr.AppendString(dst, k)
			dst = append(dst, ':')
			if dst, p, err = s.appendJSON(dst, v, depth+1, start); err != nil {
				return dst, 0, err
			}
		}
		return append(dst, '}'), p, nil
	case KindArray:
		dst = append(dst, '[')
		p := data
		for i := uint(0); i < size; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, p, err = s.appendJSON(dst, p, depth+1, start); err != nil {
				return dst, 0, err
			}
		}
		return append(dst, ']'), p, nil
	case KindString:
		return jsonstr.AppendString(dst, s[data:data+size]), data + size, nil
	case KindBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, s[data:data+size])
		return append(dst, '"'), data + size, nil
	case KindUint16, KindUint32, KindUint64:
		return strconv.AppendUint(dst, s.uint(data, size), 10), data + size, nil
	case KindUint128:
		hi, lo := s.uint128(data, size)
		return appendUint128(dst, hi, lo), data + size, nil
	case KindInt32:
		return strconv.AppendInt(dst, int64(int32(uint32(s.uint(data, size)))), 10), data + size, nil
	case KindDouble, KindFloat:
		f, bitSize := math.Float64frombits(s.uint(data, size)), 64
		if kind == KindFloat {
			f, bitSize = float64(math.Float32frombits(uint32(s.uint(data, size)))), 32
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(dst, "null"...), data + size, nil
		}
		return strconv.AppendFloat(dst, f, 'g', -1, bitSize), data + size, nil
	case KindBool:
		return strconv.AppendBool(dst, size == 1), data, nil
	}
	return dst, 0, corrupt(off, "%s cannot be written as JSON", kind)
}

// appendUint128 appends the decimal form of hi<<64 | lo.
func appendUint128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	var digits [40]byte
	i := len(digits)
	for hi != 0 || lo != 0 {
		var r uint64
		hi, r = bits.Div64(0, hi, 10)
		lo, r = bits.Div64(r, lo, 10)
		i--
		digits[i] = byte('0' + r)
	}
	return append(dst, digits[i:]...)
}
