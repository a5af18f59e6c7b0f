package format

import "encoding/binary"

// equalKey reports whether a and b are the same bytes. Keys of 4 to 8
// bytes (identifiers, the usual lookup keys) are compared with two
// overlapping loads from each side, without a call; equalKey is small
// enough to be inlined.
func equalKey(a, b []byte) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	if uint(n-4) <= 4 {
		return equal4to8(a, b)
	}
	return string(a) == string(b)
}

// equal4to8 is equalKey for a and b of the same length, 4 to 8 bytes.
func equal4to8(a, b []byte) bool {
	le := binary.LittleEndian
	n := len(a)
	return (le.Uint32(a)^le.Uint32(b))|(le.Uint32(a[n-4:])^le.Uint32(b[n-4:])) == 0
}
