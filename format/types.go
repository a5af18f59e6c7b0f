package format

import "encoding/json"

// ValidValue reports whether v is a value of type t: for TypeNumber a JSON
// number, for TypeBool true or false, for TypeJSON one JSON text; every
// value is a valid TypeText value. An empty value is valid for every type
// (a missing value, written as null).
func ValidValue(t ColumnType, v []byte) bool {
	if len(v) == 0 {
		return true
	}
	switch t {
	case TypeText:
		return true
	case TypeNumber:
		return validNumber(v)
	case TypeBool:
		return string(v) == "true" || string(v) == "false"
	case TypeJSON:
		return json.Valid(v)
	}
	return false
}

// validNumber reports whether b is a JSON number (RFC 8259, section 6).
func validNumber(b []byte) bool {
	i := 0
	if b[0] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
