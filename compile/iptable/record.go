package iptable

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// Type is a record field type.
type Type string

// Field types. TypeAuto takes the profile's type for a known path, else
// string (boolean for constants "true" and "false").
const (
	TypeAuto    Type = ""
	TypeString  Type = "string"
	TypeUint16  Type = "uint16"
	TypeUint32  Type = "uint32"
	TypeUint64  Type = "uint64"
	TypeInt32   Type = "int32"
	TypeDouble  Type = "double"
	TypeFloat   Type = "float"
	TypeBoolean Type = "boolean"
)

// ParseType parses a type name (also "bool", "float64" for double,
// "float32" for float, "int" for int32).
func ParseType(s string) (Type, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return TypeAuto, nil
	case "string", "str", "utf8_string":
		return TypeString, nil
	case "uint16":
		return TypeUint16, nil
	case "uint32":
		return TypeUint32, nil
	case "uint64":
		return TypeUint64, nil
	case "int32", "int":
		return TypeInt32, nil
	case "double", "float64":
		return TypeDouble, nil
	case "float", "float32":
		return TypeFloat, nil
	case "boolean", "bool":
		return TypeBoolean, nil
	}
	return "", fmt.Errorf("unknown type %q (want string, uint16, uint32, uint64, int32, double, float or boolean)", s)
}

func typeOf(k mmdb.Kind) Type {
	switch k {
	case mmdb.KindString:
		return TypeString
	case mmdb.KindUint16:
		return TypeUint16
	case mmdb.KindUint32:
		return TypeUint32
	case mmdb.KindUint64:
		return TypeUint64
	case mmdb.KindInt32:
		return TypeInt32
	case mmdb.KindDouble:
		return TypeDouble
	case mmdb.KindFloat:
		return TypeFloat
	case mmdb.KindBool:
		return TypeBoolean
	}
	return TypeAuto
}

// Field maps a column to a record path.
type Field struct {
	Path   string // dot-separated; integer segments index arrays
	Type   Type
	Column string
}

// Constant is a fixed field added to every record of a source.
type Constant struct {
	Path  string
	Type  Type
	Value string
}

// ParseField parses "PATH[:TYPE]=COLUMN", or "COLUMN[:TYPE]" for a field
// named like its column.
func ParseField(spec string) (Field, error) {
	lhs, col, hasEq := strings.Cut(spec, "=")
	path, typ, _ := strings.Cut(lhs, ":")
	if !hasEq {
		col = path
	}
	t, err := ParseType(typ)
	if err != nil {
		return Field{}, fmt.Errorf("field %q: %w", spec, err)
	}
	if path == "" || col == "" {
		return Field{}, fmt.Errorf("field %q: want PATH[:TYPE]=COLUMN", spec)
	}
	return Field{Path: path, Type: t, Column: col}, nil
}

// ParseConstant parses "PATH[:TYPE]=VALUE".
func ParseConstant(spec string) (Constant, error) {
	lhs, val, ok := strings.Cut(spec, "=")
	path, typ, _ := strings.Cut(lhs, ":")
	if !ok || path == "" {
		return Constant{}, fmt.Errorf("constant %q: want PATH[:TYPE]=VALUE", spec)
	}
	t, err := ParseType(typ)
	if err != nil {
		return Constant{}, fmt.Errorf("constant %q: %w", spec, err)
	}
	return Constant{Path: path, Type: t, Value: val}, nil
}

// seg is one path segment: a map key, or an array index when index >= 0.
type seg struct {
	key   string
	index int
}

func splitPath(p string) ([]seg, error) {
	if p == "" {
		return nil, fmt.Errorf("empty path")
	}
	parts := strings.Split(p, ".")
	segs := make([]seg, len(parts))
	for i, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("path %q has an empty segment", p)
		}
		segs[i] = seg{key: s, index: -1}
		if i > 0 && s[0] >= '0' && s[0] <= '9' {
			n, err := strconv.Atoi(s)
			if err != nil || n > 1000 {
				return nil, fmt.Errorf("path %q: bad array index %q", p, s)
			}
			segs[i].index = n
		}
	}
	return segs, nil
}

func joinPath(segs []seg) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.key
	}
	return strings.Join(parts, ".")
}

// checkLatLon refuses a latitude outside -90..90 or a longitude outside
// -180..180: readers place such a point nowhere (Elasticsearch's
// geo_point refuses it).
func checkLatLon(lat, lon float64) error {
	if lat < -90 || lat > 90 {
		return fmt.Errorf("latitude %g is outside -90 to 90", lat)
	}
	if lon < -180 || lon > 180 {
		return fmt.Errorf("longitude %g is outside -180 to 180", lon)
	}
	return nil
}

// checkCoordinate applies checkLatLon's bounds to a value written at
// location.latitude or location.longitude.
func checkCoordinate(path []seg, v mmdbtype.DataType) error {
	var f float64
	switch x := v.(type) {
	case mmdbtype.Float64:
		f = float64(x)
	case mmdbtype.Float32:
		f = float64(x)
	default:
		return nil
	}
	switch joinPath(path) {
	case "location.latitude":
		return checkLatLon(f, 0)
	case "location.longitude":
		return checkLatLon(0, f)
	}
	return nil
}

// parseValue converts text to a typed MMDB value.
func parseValue(t Type, s string) (mmdbtype.DataType, error) {
	switch t {
	case TypeString, TypeAuto:
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("invalid UTF-8")
		}
		return mmdbtype.String(s), nil
	case TypeUint16, TypeUint32, TypeUint64:
		bits := map[Type]int{TypeUint16: 16, TypeUint32: 32, TypeUint64: 64}[t]
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, bits)
		if err != nil {
			return nil, fmt.Errorf("%q is not a %s", s, t)
		}
		switch t {
		case TypeUint16:
			return mmdbtype.Uint16(v), nil
		case TypeUint32:
			return mmdbtype.Uint32(v), nil
		}
		return mmdbtype.Uint64(v), nil
	case TypeInt32:
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not an int32", s)
		}
		return mmdbtype.Int32(v), nil
	case TypeDouble, TypeFloat:
		bits := 64
		if t == TypeFloat {
			bits = 32
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite %s", s, t)
		}
		if t == TypeFloat {
			return mmdbtype.Float32(v), nil
		}
		return mmdbtype.Float64(v), nil
	case TypeBoolean:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "t", "1", "yes", "y":
			return mmdbtype.Bool(true), nil
		case "false", "f", "0", "no", "n":
			return mmdbtype.Bool(false), nil
		}
		return nil, fmt.Errorf("%q is not a boolean", s)
	}
	return nil, fmt.Errorf("unknown type %q", t)
}

// setPath stores v at path below cur (nil: create) and returns the
// updated value; maps and arrays are created on the way.
func setPath(cur mmdbtype.DataType, path []seg, v mmdbtype.DataType) (mmdbtype.DataType, error) {
	if len(path) == 0 {
		return v, nil
	}
	s := path[0]
	if s.index >= 0 {
		if cur == nil {
			cur = mmdbtype.Slice{}
		}
		sl, ok := cur.(mmdbtype.Slice)
		if !ok {
			return nil, fmt.Errorf("%s is not an array", s.key)
		}
		for len(sl) <= s.index {
			sl = append(sl, nil)
		}
		e, err := setPath(sl[s.index], path[1:], v)
		if err != nil {
			return nil, err
		}
		sl[s.index] = e
		return sl, nil
	}
	if cur == nil {
		cur = mmdbtype.Map{}
	}
	m, ok := cur.(mmdbtype.Map)
	if !ok {
		return nil, fmt.Errorf("%s is both a value and a map", s.key)
	}
	e, err := setPath(m[mmdbtype.String(s.key)], path[1:], v)
	if err != nil {
		return nil, err
	}
	m[mmdbtype.String(s.key)] = e
	return m, nil
}

// checkArrays reports an array element left empty (e.g. index 1 set, 0 not).
func checkArrays(v mmdbtype.DataType, path string) error {
	switch c := v.(type) {
	case mmdbtype.Map:
		for k, e := range c {
			if err := checkArrays(e, path+"."+string(k)); err != nil {
				return err
			}
		}
	case mmdbtype.Slice:
		for i, e := range c {
			p := path + "." + strconv.Itoa(i)
			if e == nil {
				return fmt.Errorf("%s is missing (array elements must be set from 0 up)", p[1:])
			}
			if err := checkArrays(e, p); err != nil {
				return err
			}
		}
	}
	return nil
}
