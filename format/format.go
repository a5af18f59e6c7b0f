// Package format defines the .lut file: its header, sections, schema,
// records and minimal perfect hash, as specified in FORMAT.md. It holds the
// encoding and decoding primitives shared by the compiler (package compile)
// and the reader (package reader); it does no I/O of its own.
//
// # Layout
//
//	<start_of_file>
//	[header: 128 bytes]
//	[SCHEMA section]   column names, key columns, key normalisation
//	[DATA section]     records, 8-byte aligned, in source order
//	[MPHF section]     minimal perfect hash: parameters, pilots, remap table
//	[SLOTS section]    n x uint64: record offset/8 | key fingerprint << 32
//	[META section]     JSON: writer, options, row counts
//	[section table]    kind, flags, offset, length, checksum per section
//	[footer: 16 bytes] section table offset, end magic
//	<end_of_file>
//
// Every section starts on a 64-byte boundary. All integers are
// little-endian. Checksums are XXH3-64 (seed 0); key hashes are XXH3-64
// seeded with the header's hash seed.
//
// The constants of this package are part of the durable format and must not
// be changed; a change of layout is a new major or minor version.
package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/internal/corrupt"
)

// Magic is the first 8 bytes of every .lut file. The high byte and the
// CR LF pair catch 7-bit and text-mode transfers, as in PNG.
const Magic = "\x89LUT\r\n\x1a\n"

// EndMagic is the last 8 bytes of every .lut file.
const EndMagic = "\x89LUTEND\n"

// Versions. A reader opens a file whose major version it knows, whatever
// its minor version; minor versions only add compatible features.
const (
	// MajorVersion 1: header, sections, XXH3 hashing, PTHash-style MPHF.
	MajorVersion = 1
	// MinorVersion 0: the first version. A file with column types is 1.1
	// (MinorTypes), one without stays 1.0.
	MinorVersion = 0
	MinorTypes   = 1
	// MinorMatch 2: a table with a match kind other than exact (version
	// 1.2; see MatchKind).
	MinorMatch = 2
	// MinorPartitioned: a file with a partitioned MPHF
	// (FeaturePartitionedMPHF) is 1.2 too.
	MinorPartitioned = 2
	// MinorBuckets 3: a file with a bucketed index (FeatureBucketedSlots).
	MinorBuckets = 3
)

// Sizes of the fixed parts.
const (
	HeaderSize       = 128
	SectionEntrySize = 32
	FooterSize       = 16
	SectionAlign     = 64
	RecordAlign      = 8
)

// Incompatible feature bits: a reader that does not know a set bit must
// refuse the file.
const (
	// FeatureFoldCase: keys were case-folded at compile time; lookups fold
	// the key the same way (FoldKey) before hashing.
	FeatureFoldCase uint32 = 1 << 0
	// FeatureColumnTypes: the schema gives a type to each column (version
	// 1.1); a 1.0 reader, which would write every value as a string,
	// refuses the file instead.
	FeatureColumnTypes uint32 = 1 << 1
	// FeatureSuffix: keys are domain suffixes (version 1.2, a SUFFIX
	// section); a lookup probes the key's label suffixes, longest first.
	FeatureSuffix uint32 = 1 << 2
	// FeaturePartitionedMPHF: the MPHF section holds a partitioned
	// function (version 1.2, mphf_partitioned.go), which a 1.0 or 1.1
	// reader cannot evaluate.
	FeaturePartitionedMPHF uint32 = 1 << 8
	// FeatureBucketedSlots: the MPHF section holds a bucket table and
	// SLOTS the buckets of a bucketed index (version 1.3, buckets.go),
	// which no earlier reader can evaluate. Only an exact or a suffix
	// table has one.
	FeatureBucketedSlots uint32 = 1 << 9

	knownIncompat = FeatureFoldCase | FeatureColumnTypes | FeatureSuffix | FeatureRange | FeatureTimeBound | FeaturePartitionedMPHF | FeatureRangeIPv4 |
		FeatureWildcard | FeaturePattern | FeatureBucketedSlots
)

// HashXXH3 is the only key hash algorithm of version 1.
const HashXXH3 = 1

// Section kinds.
const (
	SectionSchema = 1
	SectionData   = 2
	SectionMPHF   = 3
	SectionSlots  = 4
	SectionMeta   = 5
	// SectionSuffix: the label counts of a suffix table's keys (version
	// 1.2, with FeatureSuffix).
	SectionSuffix = 6
)

// SectionName returns a section kind's name.
func SectionName(kind uint32) string {
	switch kind {
	case SectionSchema:
		return "SCHEMA"
	case SectionData:
		return "DATA"
	case SectionMPHF:
		return "MPHF"
	case SectionSlots:
		return "SLOTS"
	case SectionMeta:
		return "META"
	case SectionSuffix:
		return "SUFFIX"
	case SectionWildcard:
		return "WILDCARD"
	case SectionPattern:
		return "PATTERN"
	case SectionRange:
		return "RANGE"
	case SectionTimeBound:
		return "TIMEBOUND"
	}
	return fmt.Sprintf("section-%d", kind)
}

// KeySeparator joins the values of a composite key (ASCII unit separator).
// Key column values may not contain it.
const KeySeparator = 0x1f

// Errors. Every error about the content of a file wraps ErrCorrupt, or is
// one of the more specific sentinels below.
var (
	// ErrNotTable means the file does not start with Magic.
	ErrNotTable = errors.New("not a .lut table (bad magic)")
	// ErrVersion means the file's major version or a feature bit is not
	// supported by this reader.
	ErrVersion = errors.New("unsupported .lut version")
	// ErrCorrupt means the file is damaged: a checksum mismatch, a
	// truncation, or an offset out of range. It is the one corruption
	// marker of every lutkit reader: mmdb.ErrCorrupt is the same value.
	ErrCorrupt = corrupt.ErrCorrupt
)

// CorruptError describes damage found at a byte offset of the file. It
// is the corruption error of every lutkit reader (mmdb.CorruptError is
// the same type), and unwraps to ErrCorrupt.
type CorruptError = corrupt.Error

// Corruptf returns a *CorruptError at byte off of a .lut table.
func Corruptf(off int64, format string, args ...any) error {
	return corrupt.At(".lut table", off, format, args...)
}

// Header is the fixed 128-byte header.
//
//	off size field
//	  0    8 magic
//	  8    2 major version
//	 10    2 minor version
//	 12    4 incompatible feature bits
//	 16    4 compatible feature bits
//	 20    4 column count
//	 24    8 row count
//	 32    8 hash seed
//	 40    8 section table offset
//	 48    4 section count
//	 52    4 hash algorithm (1 = XXH3-64)
//	 56    8 file size
//	 64    8 build time, Unix seconds (0 = not recorded)
//	 72    8 section table checksum
//	 80   40 reserved, zero
//	120    8 header checksum: XXH3-64 of bytes 0..119
type Header struct {
	Major, Minor   uint16
	Incompat       uint32
	Compat         uint32
	Columns        uint32
	Rows           uint64
	Seed           uint64
	SectionsOff    uint64
	SectionCount   uint32
	HashAlgorithm  uint32
	FileSize       uint64
	BuildTime      int64
	SectionsSum    uint64
	HeaderChecksum uint64 // filled by Encode, checked by DecodeHeader
}

// Encode writes h into b[:HeaderSize], computing the checksum.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	clear(b[:HeaderSize])
	copy(b, Magic)
	le := binary.LittleEndian
	le.PutUint16(b[8:], h.Major)
	le.PutUint16(b[10:], h.Minor)
	le.PutUint32(b[12:], h.Incompat)
	le.PutUint32(b[16:], h.Compat)
	le.PutUint32(b[20:], h.Columns)
	le.PutUint64(b[24:], h.Rows)
	le.PutUint64(b[32:], h.Seed)
	le.PutUint64(b[40:], h.SectionsOff)
	le.PutUint32(b[48:], h.SectionCount)
	le.PutUint32(b[52:], h.HashAlgorithm)
	le.PutUint64(b[56:], h.FileSize)
	le.PutUint64(b[64:], uint64(h.BuildTime))
	le.PutUint64(b[72:], h.SectionsSum)
	h.HeaderChecksum = xxh3.Hash(b[:120])
	le.PutUint64(b[120:], h.HeaderChecksum)
}

// DecodeHeader validates and decodes a header, in a fixed order: size,
// magic, version, checksum, feature bits. fileSize is the actual size of
// the file.
func DecodeHeader(b []byte, fileSize int64) (Header, error) {
	var h Header
	if len(b) < len(Magic) || string(b[:len(Magic)]) != Magic {
		if fileSize == 0 {
			return h, fmt.Errorf("%w: the file is empty", ErrNotTable)
		}
		return h, ErrNotTable
	}
	if len(b) < HeaderSize || fileSize < HeaderSize+FooterSize {
		return h, Corruptf(fileSize, "file truncated: %d bytes is shorter than a header and footer", fileSize)
	}
	le := binary.LittleEndian
	h.Major = le.Uint16(b[8:])
	h.Minor = le.Uint16(b[10:])
	if h.Major != MajorVersion {
		return h, fmt.Errorf("%w: file is version %d.%d, this reader supports %d.x", ErrVersion, h.Major, h.Minor, MajorVersion)
	}
	h.HeaderChecksum = le.Uint64(b[120:])
	if sum := xxh3.Hash(b[:120]); sum != h.HeaderChecksum {
		return h, Corruptf(120, "header checksum mismatch (stored %#x, computed %#x)", h.HeaderChecksum, sum)
	}
	h.Incompat = le.Uint32(b[12:])
	h.Compat = le.Uint32(b[16:])
	h.Columns = le.Uint32(b[20:])
	h.Rows = le.Uint64(b[24:])
	h.Seed = le.Uint64(b[32:])
	h.SectionsOff = le.Uint64(b[40:])
	h.SectionCount = le.Uint32(b[48:])
	h.HashAlgorithm = le.Uint32(b[52:])
	h.FileSize = le.Uint64(b[56:])
	h.BuildTime = int64(le.Uint64(b[64:]))
	h.SectionsSum = le.Uint64(b[72:])
	if unknown := h.Incompat &^ knownIncompat; unknown != 0 {
		return h, fmt.Errorf("%w: unknown incompatible feature bits %#x", ErrVersion, unknown)
	}
	if h.HashAlgorithm != HashXXH3 {
		return h, fmt.Errorf("%w: unknown hash algorithm %d", ErrVersion, h.HashAlgorithm)
	}
	if h.FileSize != uint64(fileSize) {
		return h, Corruptf(56, "file is %d bytes but the header says %d (truncated or extended)", fileSize, h.FileSize)
	}
	return h, nil
}

// Section is one entry of the section table.
//
//	off size field
//	  0    4 kind
//	  4    4 flags (zero in version 1)
//	  8    8 offset from the start of the file
//	 16    8 length in bytes
//	 24    8 checksum: XXH3-64 of the section's bytes
type Section struct {
	Kind     uint32
	Flags    uint32
	Off      uint64
	Len      uint64
	Checksum uint64
}

// AppendSection appends an encoded section table entry.
func AppendSection(dst []byte, s Section) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, s.Kind)
	dst = le.AppendUint32(dst, s.Flags)
	dst = le.AppendUint64(dst, s.Off)
	dst = le.AppendUint64(dst, s.Len)
	return le.AppendUint64(dst, s.Checksum)
}

// DecodeSections decodes and checks the section table of a file of
// fileSize bytes: checksum, bounds, alignment, no overlap, and every
// required section present exactly once.
func DecodeSections(file []byte, h *Header) ([HighestSection + 1]Section, error) {
	var out [HighestSection + 1]Section
	size := uint64(len(file))
	tableLen := uint64(h.SectionCount) * SectionEntrySize
	if h.SectionCount == 0 || h.SectionCount > 64 || h.SectionsOff < HeaderSize ||
		h.SectionsOff > size || tableLen > size-h.SectionsOff || h.SectionsOff+tableLen != size-FooterSize {
		return out, Corruptf(40, "section table (offset %d, %d entries) does not fit the file", h.SectionsOff, h.SectionCount)
	}
	table := file[h.SectionsOff : h.SectionsOff+tableLen]
	if sum := xxh3.Hash(table); sum != h.SectionsSum {
		return out, Corruptf(int64(h.SectionsOff), "section table checksum mismatch")
	}
	footer := file[size-FooterSize:]
	if string(footer[8:]) != EndMagic || binary.LittleEndian.Uint64(footer) != h.SectionsOff {
		return out, Corruptf(int64(size-FooterSize), "bad footer")
	}
	le := binary.LittleEndian
	end := uint64(HeaderSize)
	for i := uint64(0); i < uint64(h.SectionCount); i++ {
		e := table[i*SectionEntrySize:]
		s := Section{Kind: le.Uint32(e), Flags: le.Uint32(e[4:]), Off: le.Uint64(e[8:]), Len: le.Uint64(e[16:]), Checksum: le.Uint64(e[24:])}
		at := int64(h.SectionsOff + i*SectionEntrySize)
		if s.Off%SectionAlign != 0 || s.Off < end || s.Off > h.SectionsOff || s.Len > h.SectionsOff-s.Off {
			return out, Corruptf(at, "section %s (offset %d, length %d) is misplaced", SectionName(s.Kind), s.Off, s.Len)
		}
		end = s.Off + s.Len
		if s.Kind == 0 || s.Kind > HighestSection {
			continue // unknown sections are skipped (compatible extensions)
		}
		if out[s.Kind].Kind != 0 {
			return out, Corruptf(at, "section %s appears twice", SectionName(s.Kind))
		}
		out[s.Kind] = s
	}
	for k := uint32(1); k <= highestRequired; k++ {
		if out[k].Kind == 0 {
			return out, Corruptf(int64(h.SectionsOff), "section %s is missing", SectionName(k))
		}
	}
	return out, nil
}

// Meta is the content of the META section: how the table was built, as
// JSON. Lookups never need it.
type Meta struct {
	Writer      string   `json:"writer"`
	Key         []string `json:"key"`
	FoldCase    bool     `json:"fold_case"`
	OnDuplicate string   `json:"on_duplicate"`
	SourceRows  int64    `json:"source_rows"`
	SkippedRows int64    `json:"skipped_rows"`
	Duplicates  int64    `json:"duplicates"`
	// Match is the match kind of a table that is not exact ("suffix",
	// "range"); RangeColumns, ValidFrom, ValidTo and Overlap are the
	// options of a range or time-bounded table (version 1.2).
	Match        string   `json:"match,omitempty"`
	RangeColumns []string `json:"range_columns,omitempty"`
	ValidFrom    string   `json:"valid_from,omitempty"`
	ValidTo      string   `json:"valid_to,omitempty"`
	Overlap      string   `json:"overlap,omitempty"`
}

// HighestSection is the highest section kind of this version; the kinds
// up to highestRequired are in every file, the others only in a file
// whose feature bits call for them.
const (
	HighestSection  = SectionSuffix
	highestRequired = SectionMeta
)

// Schema is the decoded SCHEMA section.
//
//	u32 column count, u32 key column count, u32 flags, u32 reserved (0)
//	key column count x u32: indexes of the key columns, in key order
//	column count x (u32 length, bytes): column names, UTF-8
//	with SchemaTypes in flags: column count x u8, the column types
type Schema struct {
	Columns []string
	Key     []int
	// Types is the type of each column, or nil when every column is text
	// (a file without SchemaTypes).
	Types []ColumnType
}

// SchemaTypes is the schema flag of a schema that ends with column types.
const SchemaTypes uint32 = 1 << 0

// ColumnType is how a column's values are written as JSON. The values of
// every type are stored as text; a compiler checks those of a typed column
// before it writes them.
type ColumnType uint8

// Column types.
const (
	// TypeText values are JSON strings (the type of every column of a
	// file without column types).
	TypeText ColumnType = 0
	// TypeNumber values are JSON numbers, written as stored.
	TypeNumber ColumnType = 1
	// TypeBool values are true or false.
	TypeBool ColumnType = 2
	// TypeJSON values are JSON texts (objects, arrays, any value),
	// written as stored.
	TypeJSON ColumnType = 3

	highestType = TypeJSON
)

var typeNames = [...]string{"text", "number", "bool", "json"}

// String returns the type's name, as --column-type takes it.
func (t ColumnType) String() string {
	if t <= highestType {
		return typeNames[t]
	}
	return fmt.Sprintf("type-%d", uint8(t))
}

// ParseColumnType returns the type of a name: text, number, bool or json.
func ParseColumnType(name string) (ColumnType, error) {
	for i, n := range typeNames {
		if n == name {
			return ColumnType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown column type %q (want text, number, bool or json)", name)
}

// Type returns the type of column i.
func (s *Schema) Type(i int) ColumnType {
	if s.Types == nil {
		return TypeText
	}
	return s.Types[i]
}

// Typed reports whether some column is not text; a writer sets
// FeatureColumnTypes and writes the types exactly then.
func (s *Schema) Typed() bool {
	for _, t := range s.Types {
		if t != TypeText {
			return true
		}
	}
	return false
}

// AppendSchema appends an encoded schema. Its types are written only when
// some column is not text, so a table of text columns is a 1.0 file.
func AppendSchema(dst []byte, s *Schema) []byte {
	le := binary.LittleEndian
	typed := s.Typed()
	dst = le.AppendUint32(dst, uint32(len(s.Columns)))
	dst = le.AppendUint32(dst, uint32(len(s.Key)))
	flags := uint32(0)
	if typed {
		flags = SchemaTypes
	}
	dst = le.AppendUint32(dst, flags)
	dst = le.AppendUint32(dst, 0)
	for _, k := range s.Key {
		dst = le.AppendUint32(dst, uint32(k))
	}
	for _, c := range s.Columns {
		dst = le.AppendUint32(dst, uint32(len(c)))
		dst = append(dst, c...)
	}
	if typed {
		for _, t := range s.Types {
			dst = append(dst, byte(t))
		}
	}
	return dst
}

// DecodeSchema decodes a schema; off is the section offset (for errors).
func DecodeSchema(b []byte, off int64, columns uint32) (*Schema, error) {
	le := binary.LittleEndian
	if len(b) < 16 {
		return nil, Corruptf(off, "schema section too short")
	}
	nc, nk := le.Uint32(b), le.Uint32(b[4:])
	if nc != columns || nc == 0 || nk == 0 || nk > nc || uint64(len(b)) < 16+4*uint64(nk)+4*uint64(nc) {
		return nil, Corruptf(off, "schema of %d columns and %d key columns does not fit the header (%d columns)", nc, nk, columns)
	}
	flags := le.Uint32(b[8:])
	if flags&^SchemaTypes != 0 || le.Uint32(b[12:]) != 0 {
		return nil, Corruptf(off+8, "unknown schema flags %#x", flags)
	}
	s := &Schema{Columns: make([]string, 0, nc), Key: make([]int, nk)}
	p := b[16:]
	for i := range s.Key {
		k := le.Uint32(p[4*i:])
		if k >= nc {
			return nil, Corruptf(off, "key column %d out of range", k)
		}
		s.Key[i] = int(k)
	}
	p = p[4*nk:]
	for i := uint32(0); i < nc; i++ {
		if len(p) < 4 {
			return nil, Corruptf(off, "schema truncated in column %d", i)
		}
		l := le.Uint32(p)
		if uint64(l) > uint64(len(p)-4) {
			return nil, Corruptf(off, "schema truncated in column %d", i)
		}
		s.Columns = append(s.Columns, string(p[4:4+l]))
		p = p[4+l:]
	}
	if flags&SchemaTypes != 0 {
		if uint64(len(p)) < uint64(nc) {
			return nil, Corruptf(off, "schema truncated in the column types")
		}
		s.Types = make([]ColumnType, nc)
		for i := range s.Types {
			if t := ColumnType(p[i]); t > highestType {
				return nil, Corruptf(off, "column %d has unknown type %d", i, t)
			}
			s.Types[i] = ColumnType(p[i])
		}
		p = p[nc:]
	}
	if len(p) != 0 {
		return nil, Corruptf(off, "%d stray bytes after the schema", len(p))
	}
	return s, nil
}

// Records
//
// A record starts on an 8-byte boundary of the DATA section. A narrow
// record (key and values each shorter than 65535 bytes) is
//
//	u16         key length K (< 0xffff)
//	C x u16     end offset of each column's value, relative to the start
//	            of the values, non-decreasing
//	K bytes     key (normalised: composite parts joined by KeySeparator,
//	            case-folded with FeatureFoldCase)
//	values      column values, concatenated
//	padding     zero bytes to the next 8-byte boundary
//
// and a wide record is
//
//	u16 0xffff, u16 0, u32 K, C x u32 end offsets, key, values, padding.
//
// C is the column count.

// WideMarker is the first u16 of a wide record.
const WideMarker = 0xffff

// RecordHeaderSize returns the size of a record's fixed part.
func RecordHeaderSize(columns int, wide bool) int {
	if wide {
		return 4 * (columns + 2)
	}
	return 2 * (columns + 1)
}

// IsWide reports whether a record for key and values needs the wide form.
func IsWide(key []byte, values [][]byte) bool {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	return len(key) >= WideMarker || n > 0xffff
}

// AppendRecord appends a record (with its padding) for key and values.
func AppendRecord(dst []byte, key []byte, values [][]byte) []byte {
	le := binary.LittleEndian
	if IsWide(key, values) {
		dst = le.AppendUint16(dst, WideMarker)
		dst = le.AppendUint16(dst, 0)
		dst = le.AppendUint32(dst, uint32(len(key)))
		end := 0
		for _, v := range values {
			end += len(v)
			dst = le.AppendUint32(dst, uint32(end))
		}
	} else {
		dst = le.AppendUint16(dst, uint16(len(key)))
		end := 0
		for _, v := range values {
			end += len(v)
			dst = le.AppendUint16(dst, uint16(end))
		}
	}
	dst = append(dst, key...)
	for _, v := range values {
		dst = append(dst, v...)
	}
	for len(dst)%RecordAlign != 0 {
		dst = append(dst, 0)
	}
	return dst
}

// Slot packs a record offset (a multiple of 8, below 32 GiB) and a key
// fingerprint into a SLOTS entry.
func Slot(recordOff uint64, fp uint32) uint64 { return recordOff/RecordAlign | uint64(fp)<<32 }

// SlotRecord returns the record offset of a SLOTS entry.
func SlotRecord(slot uint64) uint64 { return (slot & 0xffffffff) * RecordAlign }

// SlotFingerprint returns the fingerprint of a SLOTS entry.
func SlotFingerprint(slot uint64) uint32 { return uint32(slot >> 32) }

// MaxDataSize is the largest DATA section the 32-bit slot offsets address.
const MaxDataSize = (1 << 32) * RecordAlign

// HashKey returns the XXH3-64 hash of a normalised key.
func HashKey(key []byte, seed uint64) uint64 { return xxh3.HashSeed(key, seed) }

// Fingerprint derives a key's 32-bit fingerprint from its hash. It mixes
// all 64 bits, so that keys sharing a bucket (and so the hash's high bits)
// still differ in fingerprint.
func Fingerprint(h uint64) uint32 {
	h ^= h >> 31
	h *= 0x7fb5d329728ea185
	h ^= h >> 27
	hi, lo := bits.Mul64(h, 0x81dadef4bc2dd44d)
	return uint32(hi ^ lo)
}

// FoldKey appends the case-folded form of key to dst: every rune mapped
// with unicode.ToLower; invalid UTF-8 bytes are kept as they are. ASCII
// keys take a fast path.
func FoldKey(dst, key []byte) []byte {
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(key[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, c)
		} else {
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
		i += size
	}
	return dst
}
