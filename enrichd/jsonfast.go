package enrichd

import (
	"encoding/binary"

	"github.com/lutkit/lutkit/enrichd/parse"
)

const (
	lo7   = 0x0101010101010101
	hi8   = 0x8080808080808080
	space = 0x2020202020202020
	quote = 0x2222222222222222
	bslsh = 0x5c5c5c5c5c5c5c5c
)

// plain8 reports whether none of the 8 bytes of v needs escaping in a JSON
// string (no control byte, '"', '\\' or byte >= 0x80).
func plain8(v uint64) bool {
	q := v ^ quote
	b := v ^ bslsh
	special := (v & hi8) | ((v - space) & ^v & hi8) | ((q - lo7) & ^q & hi8) | ((b - lo7) & ^b & hi8)
	return special == 0
}

// appendStr is parse.AppendString with a fast path for strings that need
// no escaping (checked 8 bytes at a time), the common case for table
// values and log fields.
func appendStr(dst, s []byte) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !plain8(binary.LittleEndian.Uint64(s[i:])) {
			return parse.AppendString(dst, s)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return parse.AppendString(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
