package mmdb

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Fields is a compiled set of record paths. Compile it once with
// CompileFields and pass it to every LookupFields call; a Fields value is
// read-only after compilation and safe for concurrent use.
type Fields struct {
	paths []string
	root  fieldNode
}

type fieldNode struct {
	key      string // map key this node matches
	index    int    // array index this node matches, when isIndex
	isIndex  bool
	slot     int // output slot, or -1
	children []fieldNode
}

// CompileFields compiles record paths. A path is a dot-separated list of map
// keys; a segment that is an integer also selects an array element (negative
// counts from the end), so "subdivisions.-1.iso_code" is the last
// subdivision's code. Value i of a lookup holds path i.
func CompileFields(paths ...string) (*Fields, error) {
	f := &Fields{paths: append([]string(nil), paths...), root: fieldNode{slot: -1}}
	for i, p := range paths {
		if p == "" {
			return nil, fmt.Errorf("field path %d is empty", i+1)
		}
		n := &f.root
		for seg := range strings.SplitSeq(p, ".") {
			if seg == "" {
				return nil, fmt.Errorf("field path %q has an empty segment", p)
			}
			var child *fieldNode
			for j := range n.children {
				if n.children[j].key == seg {
					child = &n.children[j]
					break
				}
			}
			if child == nil {
				c := fieldNode{key: seg, slot: -1}
				if v, err := strconv.Atoi(seg); err == nil {
					c.index, c.isIndex = v, true
				}
				n.children = append(n.children, c)
				child = &n.children[len(n.children)-1]
			}
			n = child
		}
		if n.slot >= 0 {
			return nil, fmt.Errorf("field path %q is listed twice", p)
		}
		n.slot = i
	}
	return f, nil
}

// Len returns the number of paths.
func (f *Fields) Len() int { return len(f.paths) }

// Path returns path i as given to CompileFields.
func (f *Fields) Path(i int) string { return f.paths[i] }

// Value is one decoded field. Strings and bytes alias the Reader's mapping:
// Bytes and UnsafeString are valid only until the Reader is closed; String
// returns a copy.
type Value struct {
	kind Kind
	b    []byte
	u    uint64 // unsigned value, int32 bits, bool, float64 bits, uint128 low word
	hi   uint64 // uint128 high word
}

// Kind returns the stored type, or KindInvalid if the path was not found.
func (v Value) Kind() Kind { return v.kind }

// Found reports whether the path was present in the record.
func (v Value) Found() bool { return v.kind != KindInvalid }

// Bytes returns a string or bytes value without copying.
func (v Value) Bytes() []byte { return v.b }

// UnsafeString returns a string or bytes value without copying. The string
// aliases the file mapping: do not keep it after the Reader is closed.
func (v Value) UnsafeString() string {
	if len(v.b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(v.b), len(v.b))
}

// String returns a copy of a string or bytes value, or the value formatted
// as text for the other kinds ("" when not found).
func (v Value) String() string {
	switch v.kind {
	case KindString, KindBytes:
		return string(v.b)
	case KindUint16, KindUint32, KindUint64:
		return strconv.FormatUint(v.u, 10)
	case KindInt32:
		return strconv.FormatInt(int64(int32(v.u)), 10)
	case KindDouble, KindFloat:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case KindBool:
		return strconv.FormatBool(v.u != 0)
	case KindUint128:
		if v.hi == 0 {
			return strconv.FormatUint(v.u, 10)
		}
		return fmt.Sprintf("0x%x%016x", v.hi, v.u)
	case KindMap, KindArray:
		return "<" + v.kind.String() + ">"
	}
	return ""
}

// Uint returns an unsigned integer value (uint16, uint32, uint64, the low
// word of a uint128, or a non-negative int32).
func (v Value) Uint() uint64 { return v.u }

// Int returns an int32 value, or an unsigned value as int64.
func (v Value) Int() int64 {
	if v.kind == KindInt32 {
		return int64(int32(v.u))
	}
	return int64(v.u)
}

// Uint128 returns the high and low words of a uint128 value.
func (v Value) Uint128() (hi, lo uint64) { return v.hi, v.u }

// Float returns a double or float value.
func (v Value) Float() float64 {
	switch v.kind {
	case KindDouble:
		return math.Float64frombits(v.u)
	case KindFloat:
		return float64(math.Float32frombits(uint32(v.u)))
	}
	return 0
}

// Bool returns a boolean value.
func (v Value) Bool() bool { return v.kind == KindBool && v.u != 0 }

// Len returns the number of entries of a map or array value.
func (v Value) Len() int {
	if v.kind == KindMap || v.kind == KindArray {
		return int(v.u)
	}
	return len(v.b)
}
