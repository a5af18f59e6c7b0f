package mmdb

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	damage "github.com/lutkit/lutkit/internal/corrupt"
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

// checkMetadataShape is what Open needs of the metadata before it reads
// anything else: a map that decodes within bounds, binary format 2 and a
// record size the tree walk supports. What particular readers need beyond
// that is in Findings.
func checkMetadataShape(s section) error {
	t, _, err := s.typedBudget(0, 0, &budget{})
	if err != nil {
		return fmt.Errorf("invalid MMDB metadata: %w", err)
	}
	if t.Kind != KindMap {
		return fmt.Errorf("invalid MMDB metadata: a %s, not a map", t.Kind)
	}
	if v, _ := t.Get("binary_format_major_version"); v.Uint != 2 {
		return fmt.Errorf("invalid MMDB metadata: binary format %d is not 2", v.Uint)
	}
	switch v, _ := t.Get("record_size"); v.Uint {
	case 24, 28, 32:
	default:
		return fmt.Errorf("invalid MMDB metadata: record_size %d", v.Uint)
	}
	return nil
}

// Verify checks that the file is a valid MaxMind DB, with the full
// verification of maxminddb-golang (the reference Go reader): the
// metadata, every search tree node, every data record, the data section
// separator and that no data goes unreferenced. It accepts every valid
// file; what particular readers refuse in a valid file is reported by
// Findings. Its errors about the file unwrap to ErrCorrupt.
func (r *Reader) Verify() error {
	if r.db == nil {
		return errClosed
	}
	return damage.Mark(r.db.Verify())
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
