package enrichd

import (
	"encoding/binary"
	"slices"

	"github.com/lutkit/lutkit/enrichd/parse"
)

const (
	lo7   = 0x0101010101010101
	hi8   = 0x8080808080808080
	space = 0x2020202020202020
	quote = 0x2222222222222222
	bslsh = 0x5c5c5c5c5c5c5c5c
)

// special8 returns the high bit of each byte of v that needs escaping in a
// JSON string (a control byte, '"', '\\' or a byte >= 0x80). A borrow of
// its subtractions can set the bit of bytes above such a byte too, so only
// whether the result is 0 is meaningful.
func special8(v uint64) uint64 {
	return (v | (v - space) | ((v ^ quote) - lo7) | ((v ^ bslsh) - lo7)) & hi8
}

// plain8 reports whether none of the 8 bytes of v needs escaping in a JSON
// string.
func plain8(v uint64) bool { return special8(v) == 0 }

// appendStr is parse.AppendString with a fast path for strings that need
// no escaping, the common case for table values and log fields.
func appendStr(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = appendEsc(dst, s)
	return append(dst, '"')
}

// appendEsc is parse.AppendEscaped (s escaped, without quotes) with a fast
// path: it copies s 8 bytes at a time while checking that no byte needs
// escaping, and leaves the rest to parse.AppendEscaped from the first
// word that does.
func appendEsc(dst, s []byte) []byte {
	n := len(dst)
	if cap(dst)-n < len(s) {
		dst = slices.Grow(dst, len(s))
	}
	d := dst[n : n+len(s)]
	i := 0
	for ; i+8 <= len(s); i += 8 {
		v := binary.LittleEndian.Uint64(s[i:])
		if !plain8(v) {
			return parse.AppendEscaped(dst[:n+i], s[i:])
		}
		binary.LittleEndian.PutUint64(d[i:], v)
	}
	switch {
	case i == len(s):
	case len(s) >= 8:
		// The last partial word: check and copy the last 8 bytes, which
		// overlap the bytes already done.
		j := len(s) - 8
		v := binary.LittleEndian.Uint64(s[j:])
		if !plain8(v) {
			return parse.AppendEscaped(dst[:n+i], s[i:])
		}
		binary.LittleEndian.PutUint64(d[j:], v)
	case len(s) >= 4:
		// Two 4-byte words, overlapping when s is shorter than 8.
		lo := binary.LittleEndian.Uint32(s)
		hi := binary.LittleEndian.Uint32(s[len(s)-4:])
		if !plain8(uint64(lo) | uint64(hi)<<32) {
			return parse.AppendEscaped(dst[:n], s)
		}
		binary.LittleEndian.PutUint32(d, lo)
		binary.LittleEndian.PutUint32(d[len(s)-4:], hi)
	default:
		// 1 to 3 bytes: the first, middle and last byte are all of them.
		a, b, c := s[0], s[len(s)/2], s[len(s)-1]
		if !plain8(space&^0xffffff | uint64(a) | uint64(b)<<8 | uint64(c)<<16) {
			return parse.AppendEscaped(dst[:n], s)
		}
		d[len(s)-1], d[len(s)/2], d[0] = c, b, a
	}
	return dst[:n+len(s)]
}
