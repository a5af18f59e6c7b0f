package parse

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// Byte classes for key=value scanning.
const (
	clSpace = 1 << iota // ' ' or '\t': separates tokens
	clEq                // '='
)

var kvClass = [256]uint8{' ': clSpace, '\t': clSpace, '=': clEq}

// nextPair finds the first key=value pair in msg[i:]. It returns the key,
// the value and the index to continue from, or next < 0 when there is
// none. Tokens are separated by spaces or tabs; tokens without '=' and
// with an empty key are skipped. A value starting with '"' runs to the
// next unescaped '"' (or the end of msg) and is returned without the
// quotes, its backslash escapes untouched.
func nextPair(msg []byte, i int) (key, val []byte, next int) {
	n := len(msg)
	for i < n {
		if kvClass[msg[i]]&clSpace != 0 {
			i++
			continue
		}
		s := i
		for i < n && kvClass[msg[i]] == 0 {
			i++
		}
		if i >= n || msg[i] != '=' {
			continue // a bare word
		}
		key = msg[s:i:i]
		i++
		if i < n && msg[i] == '"' {
			i++
			vs := i
			for i < n && msg[i] != '"' {
				if msg[i] == '\\' {
					i++
				}
				i++
			}
			if i >= n {
				i = n
				val = msg[vs:n:n]
			} else {
				val = msg[vs:i:i]
				i++
				// Anything glued to the closing quote belongs to this token.
				for i < n && kvClass[msg[i]]&clSpace == 0 {
					i++
				}
			}
		} else {
			vs := i
			for i < n && kvClass[msg[i]]&clSpace == 0 {
				i++
			}
			val = msg[vs:i:i]
		}
		if len(key) == 0 {
			continue
		}
		return key, val, i
	}
	return nil, nil, -1
}

// KV returns the value of the first key=value token in msg whose key is
// exactly key ("xcust=1" does not match "cust", nor does "cust=1" inside
// a quoted value). A double-quoted value is returned without its quotes,
// backslash escapes untouched. A present but empty value gives a
// zero-length, non-nil val and ok == true. val aliases msg.
func KV(msg, key []byte) (val []byte, ok bool) {
	if bytes.IndexByte(msg, '"') < 0 {
		if !plainKey(key) {
			return nil, false
		}
		return kvPlain(msg, key)
	}
	for i := 0; ; {
		k, v, next := nextPair(msg, i)
		if next < 0 {
			return nil, false
		}
		if string(k) == string(key) {
			return v, true
		}
		i = next
	}
}

// plainKey reports whether key can be a token key: non-empty, without
// separators or '='.
func plainKey(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if kvClass[key[i]] != 0 {
			return false
		}
	}
	return true
}

// kvPlain is KV for a message without any '"' and a plainKey key: a match
// of "key=" at the start of a token is then exactly the first pair with
// that key, so a fast substring search can be used.
func kvPlain(msg, key []byte) ([]byte, bool) {
	n := len(key)
	for off := 0; ; {
		j := bytes.Index(msg[off:], key)
		if j < 0 {
			return nil, false
		}
		j += off
		if e := j + n; e < len(msg) && msg[e] == '=' && (j == 0 || kvClass[msg[j-1]]&clSpace != 0) {
			vs := e + 1
			k := tokenEnd(msg, vs)
			return msg[vs:k:k], true
		}
		off = j + 1
	}
}

// tokenEnd returns the index of the first ' ' or '\t' of msg from i on, or
// len(msg). It looks at 8 bytes at a time, the last 8 of msg overlapping.
func tokenEnd(msg []byte, i int) int {
	le := binary.LittleEndian
	for ; i+8 <= len(msg); i += 8 {
		if z := sepBytes(le.Uint64(msg[i:])); z != 0 {
			return i + bits.TrailingZeros64(z)>>3
		}
	}
	if i >= len(msg) {
		return len(msg)
	}
	if n := len(msg); n >= 8 {
		// The bytes before i are in the word too: their bits are dropped.
		b := 8 * uint(i-(n-8))
		if z := sepBytes(le.Uint64(msg[n-8:])) >> b << b; z != 0 {
			return n - 8 + bits.TrailingZeros64(z)>>3
		}
		return n
	}
	for ; i < len(msg); i++ {
		if kvClass[msg[i]]&clSpace != 0 {
			return i
		}
	}
	return i
}

// sepBytes returns the high bit of each byte of v that is ' ' or '\t',
// and no other bit.
func sepBytes(v uint64) uint64 {
	const lo7 = 0x7f7f7f7f7f7f7f7f
	a, b := v^0x2020202020202020, v^0x0909090909090909
	// The high bit of a byte of (x&lo7 + lo7) | x is clear exactly where
	// the byte of x is 0 (the sum cannot carry across bytes).
	return ^((a&lo7+lo7|a)&(b&lo7+lo7|b) | lo7)
}

// EachKV calls fn for every key=value token in msg, in order, until fn
// returns false. Tokenisation is as for KV; k and v alias msg.
func EachKV(msg []byte, fn func(k, v []byte) bool) {
	for i := 0; ; {
		k, v, next := nextPair(msg, i)
		if next < 0 || !fn(k, v) {
			return
		}
		i = next
	}
}

// Extractor pulls a fixed set of keys out of key=value messages in one
// pass. It is immutable after NewExtractor and safe for concurrent use.
type Extractor struct {
	keys   []string
	lens   uint64 // bit l set when a key has length l (l >= 63 use bit 63)
	dup    []int  // dup[i] = index of the first identical key, or -1
	bkeys  [][]byte
	plain  []bool // plain[i]: keys[i] can match at all (see plainKey)
	unique int
	index  map[string]int // used instead of a linear scan for many keys
}

const (
	extractorLinearMax = 8 // above this many keys, look them up in a map
	extractorSearchMax = 4 // up to this many keys, search each one separately
)

// NewExtractor prepares an Extractor for keys. Duplicate keys are allowed
// and receive the same value.
func NewExtractor(keys []string) *Extractor {
	x := &Extractor{keys: append([]string(nil), keys...), dup: make([]int, len(keys)),
		plain: make([]bool, len(keys)), bkeys: make([][]byte, len(keys))}
	first := make(map[string]int, len(keys))
	for i, k := range keys {
		x.bkeys[i] = []byte(k)
		x.plain[i] = plainKey(x.bkeys[i])
		x.lens |= 1 << min(len(k), 63)
		if j, ok := first[k]; ok {
			x.dup[i] = j
			continue
		}
		x.dup[i] = -1
		first[k] = i
		x.unique++
	}
	if len(first) > extractorLinearMax {
		x.index = first
	}
	return x
}

// Keys returns the keys the Extractor was built with (do not modify).
func (x *Extractor) Keys() []string { return x.keys }

// Extract sets vals[i] to the value of the first occurrence of key i in
// msg, or nil when absent, scanning msg once (tokenisation as for KV).
// vals must have at least len(Keys()) elements; values alias msg.
func (x *Extractor) Extract(msg []byte, vals [][]byte) {
	vals = vals[:len(x.keys)]
	if x.index == nil && x.unique <= extractorSearchMax && bytes.IndexByte(msg, '"') < 0 {
		// No quotes: one substring search per key beats tokenising. Each
		// key that is not a duplicate gets its value or nil.
		for i, k := range x.bkeys {
			if x.dup[i] < 0 {
				var v []byte
				if x.plain[i] {
					v, _ = kvPlain(msg, k)
				}
				vals[i] = v
			}
		}
	} else {
		clear(vals)
		x.scan(msg, vals)
	}
	if x.unique != len(x.keys) {
		for i, j := range x.dup {
			if j >= 0 {
				vals[i] = vals[j]
			}
		}
	}
}

func (x *Extractor) scan(msg []byte, vals [][]byte) {
	left := x.unique
	for i := 0; left > 0; {
		k, v, next := nextPair(msg, i)
		if next < 0 {
			break
		}
		i = next
		if x.lens&(1<<min(len(k), 63)) == 0 {
			continue
		}
		j := x.lookup(k)
		if j >= 0 && vals[j] == nil {
			vals[j] = v
			left--
		}
	}
}

func (x *Extractor) lookup(k []byte) int {
	if x.index != nil {
		if j, ok := x.index[string(k)]; ok {
			return j
		}
		return -1
	}
	for j, w := range x.keys {
		if len(w) == len(k) && string(k) == w {
			return j
		}
	}
	return -1
}

// JSON value kinds returned by JSONField.
const (
	KindString  = '"'  // val is a string's content, without quotes, with no escapes
	KindEscaped = '\\' // val is a string's content, without quotes, containing escapes: decode with AppendUnquote
	KindNumber  = '0'  // val is the number's text
	KindBool    = 'b'  // val is "true" or "false"
	KindNull    = 'n'  // val is "null"
	KindObject  = '{'  // val is the raw object, braces included
	KindArray   = '['  // val is the raw array, brackets included
)

// JSONField finds the value at path in the JSON object body without
// allocating. path is a member name, or dotted names ("source.ip") that
// descend into nested objects; at each level a member whose name equals
// the whole remaining path is preferred when it comes first, so flattened
// names containing dots also match. The first matching member wins.
// Member names are compared as raw bytes (escapes in names are not
// decoded).
//
// val aliases body; kind says how to read it (see KindString etc.).
// JSONField skips strings, objects and arrays correctly but does not
// validate the document: on invalid JSON it returns ok == false or a
// best-effort slice, never panics.
func JSONField(body, path []byte) (val []byte, kind byte, ok bool) {
	i := skipWS(body, 0)
	for {
		if i >= len(body) || body[i] != '{' {
			return nil, 0, false
		}
		i++
		descend := false
		for !descend {
			i = skipWS(body, i)
			if i >= len(body) || body[i] != '"' {
				return nil, 0, false // '}' (not found) or garbage
			}
			ke, _ := scanString(body, i)
			if ke < 0 {
				return nil, 0, false
			}
			key := body[i+1 : ke]
			i = skipWS(body, ke+1)
			if i >= len(body) || body[i] != ':' {
				return nil, 0, false
			}
			i = skipWS(body, i+1)
			if i >= len(body) {
				return nil, 0, false
			}
			if string(key) == string(path) {
				return jsonValue(body, i)
			}
			if body[i] == '{' && len(path) > len(key) && path[len(key)] == '.' && string(path[:len(key)]) == string(key) {
				path = path[len(key)+1:]
				descend = true
				continue
			}
			if i = skipValue(body, i); i < 0 {
				return nil, 0, false
			}
			i = skipWS(body, i)
			if i >= len(body) || body[i] != ',' {
				return nil, 0, false
			}
			i++
		}
	}
}

// jsonValue returns the value starting at body[i].
func jsonValue(body []byte, i int) ([]byte, byte, bool) {
	switch c := body[i]; c {
	case '"':
		end, esc := scanString(body, i)
		if end < 0 {
			return nil, 0, false
		}
		if esc {
			return body[i+1 : end : end], KindEscaped, true
		}
		return body[i+1 : end : end], KindString, true
	case '{', '[':
		end := skipValue(body, i)
		if end < 0 {
			return nil, 0, false
		}
		return body[i:end:end], c, true
	case 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		end := skipValue(body, i)
		if end < 0 {
			return nil, 0, false
		}
		v := body[i:end:end]
		switch c {
		case 'n':
			return v, KindNull, string(v) == "null"
		case 't', 'f':
			return v, KindBool, string(v) == "true" || string(v) == "false"
		}
		return v, KindNumber, true
	}
	return nil, 0, false
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the index of the closing quote of the string that
// starts at b[i] == '"', or -1, and whether it contains a backslash.
func scanString(b []byte, i int) (end int, esc bool) {
	j := i + 1
	if k := bytes.IndexByte(b[j:], '"'); k < 0 {
		return -1, false
	} else if bytes.IndexByte(b[j:j+k], '\\') < 0 {
		return j + k, false
	}
	for j < len(b) {
		switch b[j] {
		case '"':
			return j, true
		case '\\':
			j += 2
		default:
			j++
		}
	}
	return -1, true
}

// skipValue returns the index just past the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// AppendUnquote appends the decoded content of a JSON string to dst. raw
// may be the content as JSONField returns it or the full literal with its
// surrounding quotes. Escapes \" \\ \/ \b \f \n \r \t and \uXXXX (with
// surrogate pairs) are decoded; a lone surrogate becomes U+FFFD; an
// invalid escape is copied through verbatim. Other bytes, including
// invalid UTF-8, are copied as they are (jsonstr.AppendString sanitises on output).
func AppendUnquote(dst, raw []byte) []byte {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:k]...)
		raw = raw[k:]
		if len(raw) < 2 {
			return append(dst, raw...)
		}
		switch c := raw[1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw[2:])
			if !ok {
				dst = append(dst, raw[:2]...)
				break
			}
			n := 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if len(raw) >= 12 && raw[6] == '\\' && raw[7] == 'u' {
					r2, ok2 = hex4(raw[8:])
				}
				if d := utf16.DecodeRune(r, r2); ok2 && d != utf8.RuneError {
					r, n = d, 12
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			raw = raw[n:]
			continue
		default:
			dst = append(dst, raw[:2]...)
		}
		raw = raw[2:]
	}
	return dst
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// EachArrayElem calls fn with each element of arr, a JSON array as
// JSONField returns it (brackets included), as JSONField gives a value:
// its bytes and kind. It stops when fn returns false and reports false
// when arr is not an array it can read to its end.
func EachArrayElem(arr []byte, fn func(v []byte, kind byte) bool) bool {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return true
	}
	for i < len(arr) {
		v, kind, ok := jsonValue(arr, i)
		if !ok {
			return false
		}
		if !fn(v, kind) {
			return true
		}
		if i = skipValue(arr, i); i < 0 {
			return false
		}
		i = skipWS(arr, i)
		if i >= len(arr) {
			return false
		}
		switch arr[i] {
		case ']':
			return true
		case ',':
			i = skipWS(arr, i+1)
		default:
			return false
		}
	}
	return false
}
