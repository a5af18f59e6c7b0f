package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// manifestValueError says, for a value of a manifest of the wrong type
// (a *json.UnmarshalTypeError), where it is, with the indexes of its
// arrays, and what was wanted in words: "tables[0].size: want a whole
// number that fits in 64 bits, not the number 1e+30". Other errors are
// returned as they are.
func manifestValueError(b []byte, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		return err
	}
	field := valuePath(b, te.Offset)
	if field == "" {
		field = te.Field
	}
	return fmt.Errorf("%s: want %s, not %s", field, wantedValue(te.Type), givenValue(te.Value))
}

// valuePath returns the path ("tables[0].size") of the value of the JSON
// text b that ends at offset end, or "" if none does.
func valuePath(b []byte, end int64) string {
	type level struct {
		array   bool
		index   int // array: the elements begun
		key     string
		wantKey bool // object: the next token is a key
	}
	var stack []level
	begin := func() {
		if n := len(stack); n > 0 && stack[n-1].array {
			stack[n-1].index++
		}
	}
	done := func() {
		if n := len(stack); n > 0 && !stack[n-1].array {
			stack[n-1].wantKey = true
		}
	}
	path := func() string {
		var sb strings.Builder
		for _, l := range stack {
			if l.array {
				fmt.Fprintf(&sb, "[%d]", l.index-1)
				continue
			}
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(l.key)
		}
		return sb.String()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			begin()
			stack = append(stack, level{array: tok == json.Delim('['), wantKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		begin()
		if dec.InputOffset() == end {
			return path()
		}
		done()
	}
}

// wantedValue says in words what a Go value of type t is read from.
func wantedValue(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number that fits in %d bits", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number from 0 that fits in %d bits", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// givenValue says in words what encoding/json found ("number 1e+30",
// "string", "bool", "array", "object").
func givenValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	switch v {
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + v
	}
	return "a " + v
}
