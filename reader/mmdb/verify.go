package mmdb

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

var metadataMarker = []byte("\xab\xcd\xefMaxMind.com")

// MetadataMaxSize is the largest metadata section (marker included) readers
// search for: libmaxminddb only looks at the last 128 KiB of a file.
const MetadataMaxSize = 128 << 10

// findMetadata returns the offset just after the last metadata marker.
func findMetadata(b []byte) (int, error) {
	tail := b
	if len(tail) > MetadataMaxSize {
		tail = tail[len(tail)-MetadataMaxSize:]
	}
	i := bytes.LastIndex(tail, metadataMarker)
	if i < 0 {
		return 0, errors.New("invalid MMDB: no metadata marker in the last 128 KiB")
	}
	return len(b) - len(tail) + i + len(metadataMarker), nil
}

// HasMetadataMarker reports whether b (the tail of a file) holds the MMDB
// metadata marker.
func HasMetadataMarker(b []byte) bool { return bytes.Contains(b, metadataMarker) }

// metadataKinds are the metadata keys every reader needs, with the exact
// type libmaxminddb checks (a uint32 record_size, say, is refused there).
var metadataKinds = []struct {
	key  string
	kind Kind
}{
	{"binary_format_major_version", KindUint16},
	{"binary_format_minor_version", KindUint16},
	{"build_epoch", KindUint64},
	{"database_type", KindString},
	{"description", KindMap},
	{"ip_version", KindUint16},
	{"languages", KindArray},
	{"node_count", KindUint32},
	{"record_size", KindUint16},
}

// maxBuildEpoch is 9999-12-31T23:59:59Z: later values overflow time
// conversions in some readers.
const maxBuildEpoch = 253402300799

func checkMetadata(s section) error {
	t, _, err := s.typedBudget(0, 0, &budget{})
	if err != nil {
		return fmt.Errorf("invalid MMDB metadata: %w", err)
	}
	if t.Kind != KindMap {
		return fmt.Errorf("invalid MMDB metadata: a %s, not a map", t.Kind)
	}
	for _, mk := range metadataKinds {
		v, ok := t.Get(mk.key)
		if !ok {
			return fmt.Errorf("invalid MMDB metadata: no %s", mk.key)
		}
		if v.Kind != mk.kind {
			return fmt.Errorf("invalid MMDB metadata: %s is a %s, not a %s", mk.key, v.Kind, mk.kind)
		}
	}
	get := func(k string) uint64 { v, _ := t.Get(k); return v.Uint }
	switch {
	case get("binary_format_major_version") != 2:
		return fmt.Errorf("invalid MMDB metadata: binary format %d is not 2", get("binary_format_major_version"))
	case get("ip_version") != 4 && get("ip_version") != 6:
		return fmt.Errorf("invalid MMDB metadata: ip_version %d", get("ip_version"))
	case get("node_count") == 0:
		return errors.New("invalid MMDB metadata: node_count is 0")
	case get("build_epoch") == 0 || get("build_epoch") > maxBuildEpoch:
		return fmt.Errorf("invalid MMDB metadata: build_epoch %d out of range", get("build_epoch"))
	}
	switch get("record_size") {
	case 24, 28, 32:
	default:
		return fmt.Errorf("invalid MMDB metadata: record_size %d", get("record_size"))
	}
	langs, _ := t.Get("languages")
	for _, l := range langs.Array {
		if l.Kind != KindString {
			return fmt.Errorf("invalid MMDB metadata: a language is a %s", l.Kind)
		}
	}
	desc, _ := t.Get("description")
	for _, e := range desc.Map {
		if e.Value.Kind != KindString {
			return fmt.Errorf("invalid MMDB metadata: description %q is a %s", e.Key, e.Value.Kind)
		}
	}
	return nil
}

// verify runs the full maxminddb-golang verification (metadata, every tree
// node, every data record, the separator, no unreferenced data), checks the
// metadata types, that the data section has at least 3 bytes
// (libmaxminddb), and that Elasticsearch's tail scan finds the
// database_type (see TailDatabaseType).
func (r *Reader) verify() error {
	if r.db == nil {
		return errClosed
	}
	if err := r.db.Verify(); err != nil {
		return err
	}
	if err := checkMetadata(section(r.buf[r.metaOff:])); err != nil {
		return err
	}
	if len(r.data) < 3 {
		return fmt.Errorf("data section has %d bytes; libmaxminddb needs at least 3", len(r.data))
	}
	for _, window := range []int{512, 2048} {
		got, err := TailDatabaseType(r.buf, window)
		if err != nil {
			return fmt.Errorf("elasticsearch tail scan (%d bytes): %w", window, err)
		}
		if got != r.meta.DatabaseType {
			return fmt.Errorf("elasticsearch tail scan (%d bytes) found database_type %q, metadata says %q",
				window, got, r.meta.DatabaseType)
		}
	}
	return nil
}

// TailDatabaseType reads database_type the way Elasticsearch does before it
// opens a file: it takes the last window bytes (512 in older releases, 2048
// in newer ones), finds the first occurrence of "database_type" and expects
// an inline UTF-8 string of at most 28 bytes right after it.
func TailDatabaseType(b []byte, window int) (string, error) {
	if len(b) <= 512 {
		return "", fmt.Errorf("file has %d bytes; older Elasticsearch needs more than 512", len(b))
	}
	tail := b
	if len(tail) > window {
		tail = tail[len(tail)-window:]
	}
	key := []byte("database_type")
	i := bytes.Index(tail, key)
	if i < 0 {
		return "", errors.New("no database_type key in the file's tail")
	}
	i += len(key)
	if i >= len(tail) {
		return "", errors.New("database_type key at the very end")
	}
	c := tail[i]
	if c>>5 != uint8(KindString) {
		return "", fmt.Errorf("database_type value is a %s, not an inline string", Kind(c>>5))
	}
	n := int(c & 0x1f)
	if n >= 29 {
		return "", errors.New("database_type longer than 28 bytes")
	}
	if i+1+n > len(tail) {
		return "", errors.New("database_type value truncated")
	}
	return string(tail[i+1 : i+1+n]), nil
}

// Typed is a decoded value that keeps its stored type.
type Typed struct {
	Kind  Kind
	Str   string // string and bytes
	Uint  uint64 // uint16/32/64, low word of uint128, boolean (0/1)
	Hi    uint64 // high word of uint128
	Int   int32
	Float float64 // double and float
	Map   []Entry // in stored order
	Array []Typed
}

// Entry is one map entry of a Typed map.
type Entry struct {
	Key   string
	Value Typed
}

// Get returns the value of key in a map.
func (t Typed) Get(key string) (Typed, bool) {
	for _, e := range t.Map {
		if e.Key == key {
			return e.Value, true
		}
	}
	return Typed{}, false
}

// Limits of one typed decode, so that pointer fan-out in a hostile file
// cannot blow up time or memory.
const (
	maxTypedValues = 1 << 16
	maxTypedBytes  = 4 << 20
)

type budget struct{ values, bytes int }

func (s section) typed(off uint, depth int) (Typed, uint, error) {
	return s.typedBudget(off, depth, &budget{})
}

func (s section) typedBudget(off uint, depth int, used *budget) (Typed, uint, error) {
	if depth > maxDepth {
		return Typed{}, 0, errDepth
	}
	if used.values++; used.values > maxTypedValues {
		return Typed{}, 0, errors.New("record has too many values")
	}
	kind, size, data, err := s.ctrl(off)
	if err != nil {
		return Typed{}, 0, err
	}
	next := uint(0) // after the item at off; 0: after the payload
	if kind == KindPointer {
		next = data
		if kind, size, data, err = s.ctrl(size); err != nil {
			return Typed{}, 0, err
		}
		if kind == KindPointer {
			return Typed{}, 0, corrupt(off, "pointer to a pointer")
		}
	}
	end := data + size
	if kind == KindBool {
		end = data
	}
	t := Typed{Kind: kind}
	switch kind {
	case KindString, KindBytes:
		if used.bytes += int(size); used.bytes > maxTypedBytes {
			return Typed{}, 0, errors.New("record has too much text")
		}
		t.Str = string(s[data : data+size])
	case KindUint16, KindUint32, KindUint64:
		t.Uint = s.uint(data, size)
	case KindInt32:
		t.Int = int32(uint32(s.uint(data, size)))
	case KindUint128:
		t.Hi, t.Uint = s.uint128(data, size)
	case KindDouble:
		t.Float = math.Float64frombits(s.uint(data, size))
	case KindFloat:
		t.Float = float64(math.Float32frombits(uint32(s.uint(data, size))))
	case KindBool:
		t.Uint = uint64(size)
	case KindMap:
		t.Map = make([]Entry, 0, min(size, 64))
		off := data
		for range size {
			key, voff, err := s.key(off)
			if err != nil {
				return Typed{}, 0, err
			}
			v, after, err := s.typedBudget(voff, depth+1, used)
			if err != nil {
				return Typed{}, 0, err
			}
			t.Map = append(t.Map, Entry{Key: string(key), Value: v})
			off = after
		}
		end = off
	case KindArray:
		t.Array = make([]Typed, 0, min(size, 64))
		off := data
		for range size {
			v, after, err := s.typedBudget(off, depth+1, used)
			if err != nil {
				return Typed{}, 0, err
			}
			t.Array = append(t.Array, v)
			off = after
		}
		end = off
	default:
		return Typed{}, 0, corrupt(off, "unexpected %s value", kind)
	}
	if next == 0 {
		next = end
	}
	return t, next, nil
}
