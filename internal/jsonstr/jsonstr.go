// Package jsonstr writes JSON strings and objects, fast: the one JSON
// string encoder of the project, used for every JSON a program of it
// writes (enrichd's events, the rows of lut get, lut export and the lookup
// APIs, MMDB records).
//
// Its rules: '"', '\\' and the control characters are escaped (\n \r \t,
// the others as \u00XX), as are U+2028 and U+2029 (so that a line is also
// valid JavaScript); '<', '>' and '&' are written as they are; valid UTF-8
// is kept as it is; and each byte that is not part of valid UTF-8 becomes
// \ufffd, as encoding/json writes it. The output is always valid JSON, and
// decodes to the input with its invalid bytes replaced.
//
// Strings with nothing to escape, the common case, are checked and copied
// 8 bytes at a time. Nothing allocates when the destination has room.
package jsonstr

import (
	"encoding/binary"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// jsonSafe[c] is true for ASCII bytes that appear verbatim inside a JSON
// string: 0x20-0x7F except '"' and '\\'. Bytes >= 0x80 are false and are
// checked as UTF-8.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string literal, quotes included,
// escaped as the package says.
func AppendString(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

const (
	lo7   = 0x0101010101010101
	hi8   = 0x8080808080808080
	space = 0x2020202020202020
	quote = 0x2222222222222222
	bslsh = 0x5c5c5c5c5c5c5c5c
)

// needsEscape8 returns the high bit of each byte of v that needs escaping
// in a JSON string (a control byte, '"', '\\' or a byte >= 0x80). A borrow of
// its subtractions can set the bit of bytes above such a byte too, so only
// whether the result is 0 is meaningful.
func needsEscape8(v uint64) uint64 {
	return (v | (v - space) | ((v ^ quote) - lo7) | ((v ^ bslsh) - lo7)) & hi8
}

// NeedsEscape reports whether any byte of s needs escaping in a JSON
// string. From 16 bytes on it checks 16 at a time (needsEscapeLong);
// shorter, 8 at a time.
func NeedsEscape(s []byte) bool {
	if len(s) >= 16 {
		return needsEscapeLong(unsafe.SliceData(s), len(s))
	}
	return needsEscapeWords(s)
}

// needsEscapeWords is NeedsEscape 8 bytes at a time, 32 per step of its
// loop, so that a long s costs one predictable loop.
func needsEscapeWords(s []byte) bool {
	var acc uint64
	i := 0
	le := binary.LittleEndian
	if len(s) >= 32 {
		p := unsafe.Pointer(unsafe.SliceData(s))
		for ; i+32 <= len(s); i += 32 {
			w := (*[32]byte)(unsafe.Add(p, i))
			acc |= needsEscape8(le.Uint64(w[:])) | needsEscape8(le.Uint64(w[8:])) |
				needsEscape8(le.Uint64(w[16:])) | needsEscape8(le.Uint64(w[24:]))
		}
	}
	for ; i+8 <= len(s); i += 8 {
		acc |= needsEscape8(binary.LittleEndian.Uint64(s[i:]))
	}
	switch {
	case i == len(s):
	case len(s) >= 8:
		// The last partial word: the last 8 bytes, overlapping.
		acc |= needsEscape8(binary.LittleEndian.Uint64(s[len(s)-8:]))
	default:
		for _, c := range s[i:] {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return true
			}
		}
	}
	return acc != 0
}

// AppendEscaped appends the contents of AppendString's string literal for
// s: s escaped, without the quotes. The common case, a string with nothing
// to escape, is checked 16 bytes at a time and copied whole when it has 16
// bytes or more, else checked and copied as two overlapping words; a
// string with a byte to escape is escaped byte by byte.
func AppendEscaped(dst, s []byte) []byte {
	if len(s) >= 16 {
		if needsEscapeLong(unsafe.SliceData(s), len(s)) {
			return appendEscapedSlow(dst, s)
		}
		return append(dst, s...)
	}
	n := len(dst)
	if cap(dst)-n < len(s) {
		dst = slices.Grow(dst, len(s))
	}
	d := dst[n : n+len(s)]
	le := binary.LittleEndian
	switch {
	case len(s) >= 8:
		// Two 8-byte words, overlapping when s is shorter than 16.
		lo, hi := le.Uint64(s), le.Uint64(s[len(s)-8:])
		if needsEscape8(lo)|needsEscape8(hi) != 0 {
			return appendEscapedSlow(dst[:n], s)
		}
		le.PutUint64(d, lo)
		le.PutUint64(d[len(s)-8:], hi)
	case len(s) >= 4:
		// Two 4-byte words, overlapping when s is shorter than 8.
		lo, hi := le.Uint32(s), le.Uint32(s[len(s)-4:])
		if needsEscape8(uint64(lo)|uint64(hi)<<32) != 0 {
			return appendEscapedSlow(dst[:n], s)
		}
		le.PutUint32(d, lo)
		le.PutUint32(d[len(s)-4:], hi)
	case len(s) > 0:
		// 1 to 3 bytes: the first, middle and last byte are all of them.
		a, b, c := s[0], s[len(s)/2], s[len(s)-1]
		if needsEscape8(space&^0xffffff|uint64(a)|uint64(b)<<8|uint64(c)<<16) != 0 {
			return appendEscapedSlow(dst[:n], s)
		}
		d[len(s)-1], d[len(s)/2], d[0] = c, b, a
	}
	return dst[:n+len(s)]
}

// appendEscapedSlow is AppendEscaped byte by byte.
func appendEscapedSlow(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// AppendStringS is AppendString for a string.
func AppendStringS(dst []byte, s string) []byte {
	return AppendString(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// AppendKey appends k as a JSON string followed by ':'.
func AppendKey(dst, k []byte) []byte {
	return append(AppendString(dst, k), ':')
}

// AppendKeyS is AppendKey for a string.
func AppendKeyS(dst []byte, k string) []byte {
	return append(AppendStringS(dst, k), ':')
}

// Object appends one JSON object to Buf, inserting commas between
// members. Keys and string values are escaped with AppendString. Use:
//
//	o := jsonstr.Object{Buf: out[:0]}
//	o.Begin()
//	o.String("host", ev.Host)
//	o.Int("sev", int64(ev.Severity))
//	out = o.End()
//
// Members are not checked for duplicates. Nested objects can be written
// with Key followed by Begin ... EndNested.
type Object struct {
	Buf   []byte
	comma bool // a member was written at the current level
}

// Begin opens an object ('{').
func (o *Object) Begin() {
	o.Buf = append(o.Buf, '{')
	o.comma = false
}

// Key writes the separator and "k":, for a value the caller appends to Buf.
func (o *Object) Key(k string) {
	if o.comma {
		o.Buf = append(o.Buf, ',')
	}
	o.comma = true
	o.Buf = AppendKeyS(o.Buf, k)
}

// KeyB is Key for a []byte key.
func (o *Object) KeyB(k []byte) {
	if o.comma {
		o.Buf = append(o.Buf, ',')
	}
	o.comma = true
	o.Buf = AppendKey(o.Buf, k)
}

// String writes "k":"v".
func (o *Object) String(k string, v []byte) {
	o.Key(k)
	o.Buf = AppendString(o.Buf, v)
}

// StringS writes "k":"v" for a string value.
func (o *Object) StringS(k, v string) {
	o.Key(k)
	o.Buf = AppendStringS(o.Buf, v)
}

// Int writes "k":v.
func (o *Object) Int(k string, v int64) {
	o.Key(k)
	o.Buf = strconv.AppendInt(o.Buf, v, 10)
}

// Bool writes "k":true or "k":false.
func (o *Object) Bool(k string, v bool) {
	o.Key(k)
	o.Buf = strconv.AppendBool(o.Buf, v)
}

// Raw writes "k":raw, where raw must already be valid JSON.
func (o *Object) Raw(k string, raw []byte) {
	o.Key(k)
	o.Buf = append(o.Buf, raw...)
}

// End closes the object ('}') and returns Buf.
func (o *Object) End() []byte {
	o.Buf = append(o.Buf, '}')
	o.comma = true
	return o.Buf
}

// EndNested closes a nested object opened with Key + Begin, so the next
// member of the enclosing object gets its comma.
func (o *Object) EndNested() {
	o.Buf = append(o.Buf, '}')
	o.comma = true
}
