package format

import "encoding/binary"

// equalKey reports whether a and b are the same bytes. Keys of 4 to 16
// bytes (identifiers, addresses, the usual lookup keys) are compared with
// two overlapping loads from each side, without a call.
func equalKey(a, b []byte) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	if uint(n-4) <= 12 {
		return equalShort(a, b)
	}
	return string(a) == string(b)
}

// equalShort is equalKey for a and b of the same length, 4 to 16 bytes.
func equalShort(a, b []byte) bool {
	le := binary.LittleEndian
	n := len(a)
	if n <= 8 {
		return (le.Uint32(a)^le.Uint32(b))|(le.Uint32(a[n-4:])^le.Uint32(b[n-4:])) == 0
	}
	return (le.Uint64(a)^le.Uint64(b))|(le.Uint64(a[n-8:])^le.Uint64(b[n-8:])) == 0
}
