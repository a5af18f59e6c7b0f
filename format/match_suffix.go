package format

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Suffix tables
//
// The key of a row of a suffix table is a domain name, normalised by
// NormalizeSuffix: case-folded, a leading "*." or "." and a trailing "."
// removed. It is hashed into the perfect hash like any key. A lookup
// normalises its key the same way (SuffixQuery) and probes the key, then
// the key without its first label, and so on: the first row found is the
// most specific. The SUFFIX section says which label counts the table's
// keys have, so that a lookup probes only those:
//
//	u32 flags: bit 0 SuffixTimeBound (the table is bounded in time, as
//	    its header's FeatureTimeBound says); no other bit
//	u32 reserved (0)
//	u64 label mask: bit i is set when some key has i+1 labels (bit 63:
//	    64 labels or more)

// SuffixSectionSize is the length of a SUFFIX section.
const SuffixSectionSize = 16

// SuffixTimeBound is the SUFFIX section flag of a suffix table bounded in
// time (FeatureTimeBound too). A reader that knows both feature bits but
// not their combination refuses the flag, rather than answering the
// table's keys as exact ones.
const SuffixTimeBound uint32 = 1

// MaxSuffixQuery is the longest lookup key a suffix table normalises on
// the stack; a longer one (no DNS name is: 253 bytes at most) is
// normalised on the heap.
const MaxSuffixQuery = 256

// Errors of NormalizeSuffix.
var (
	ErrSuffixEmpty    = errors.New("empty domain suffix")
	ErrSuffixLabel    = errors.New("empty label in a domain suffix (two dots in a row)")
	ErrSuffixWildcard = errors.New("a '*' is allowed only as a leading \"*.\" in a suffix key")
)

// NormalizeSuffix appends the normalised form of a suffix key to dst:
// case-folded (FoldKey), without a leading "*." or "." and without a
// trailing ".". It refuses an empty key, an empty label and a '*'
// anywhere else.
func NormalizeSuffix(dst, key []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(key, []byte("*.")):
		key = key[2:]
	case len(key) > 0 && key[0] == '.':
		key = key[1:]
	}
	key = bytes.TrimSuffix(key, []byte("."))
	if len(key) == 0 {
		return dst, ErrSuffixEmpty
	}
	if bytes.IndexByte(key, '*') >= 0 {
		return dst, ErrSuffixWildcard
	}
	if key[0] == '.' || key[len(key)-1] == '.' || bytes.Contains(key, []byte("..")) {
		return dst, ErrSuffixLabel
	}
	return FoldKey(dst, key), nil
}

// SuffixQuery appends the normalised form of a lookup key to dst:
// case-folded, without one trailing "." (a fully qualified name).
func SuffixQuery(dst, key []byte) []byte {
	if n := len(key); n > 0 && key[n-1] == '.' {
		key = key[:n-1]
	}
	return FoldKey(dst, key)
}

// LabelBit returns the label mask bit of a name of n labels (n >= 1).
func LabelBit(n int) uint64 { return 1 << uint(min(n, 64)-1) }

// Labels returns the number of labels of a normalised name: its dots
// plus one.
func Labels(name []byte) int { return bytes.Count(name, []byte{'.'}) + 1 }

// AppendSuffixSection appends a SUFFIX section of a label mask and flags.
func AppendSuffixSection(dst []byte, mask uint64, flags uint32) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, flags)
	dst = le.AppendUint32(dst, 0)
	return le.AppendUint64(dst, mask)
}

// DecodeSuffixSection returns the label mask and flags of a SUFFIX
// section; off is the section's offset (for errors). A table with rows
// has a mask that is not zero.
func DecodeSuffixSection(b []byte, off int64, rows uint64) (uint64, uint32, error) {
	if len(b) != SuffixSectionSize {
		return 0, 0, Corruptf(off, "SUFFIX section of %d bytes, want %d", len(b), SuffixSectionSize)
	}
	le := binary.LittleEndian
	flags := le.Uint32(b)
	if flags&^SuffixTimeBound != 0 || le.Uint32(b[4:]) != 0 {
		return 0, 0, Corruptf(off, "unknown SUFFIX section flags %#x", flags)
	}
	mask := le.Uint64(b[8:])
	if (mask == 0) != (rows == 0) {
		return 0, 0, Corruptf(off+8, "SUFFIX label mask %#x does not fit a table of %d rows", mask, rows)
	}
	return mask, flags, nil
}
