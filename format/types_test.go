package format

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestValidValue: a number value is what encoding/json takes for a
// number, a bool is true or false, a json value is one JSON text, and an
// empty value is valid for every type.
func TestValidValue(t *testing.T) {
	for _, v := range []string{"0", "-0", "1.5", "-20e3", "1E+2", "0.0e-0", "01", "1.", ".5", "+1", "1e", "-", "1x", "NaN", "0x10", "1_0", "9007199254740993"} {
		var n json.Number
		err := json.Unmarshal([]byte(v), &n)
		if got, want := ValidValue(TypeNumber, []byte(v)), err == nil; got != want {
			t.Errorf("number %q: valid %v, encoding/json says %v", v, got, want)
		}
	}
	if ValidValue(TypeNumber, []byte(" 1")) {
		t.Errorf("number %q with a space is valid", " 1")
	}
	for v, want := range map[string]bool{"true": true, "false": true, "True": false, "1": false, "truee": false} {
		if got := ValidValue(TypeBool, []byte(v)); got != want {
			t.Errorf("bool %q: valid %v, want %v", v, got, want)
		}
	}
	for v, want := range map[string]bool{`{"a":[1,null]}`: true, `"s"`: true, `[]`: true, `{`: false, `{} {}`: false} {
		if got := ValidValue(TypeJSON, []byte(v)); got != want {
			t.Errorf("json %q: valid %v, want %v", v, got, want)
		}
	}
	for _, ty := range []ColumnType{TypeText, TypeNumber, TypeBool, TypeJSON} {
		if !ValidValue(ty, nil) {
			t.Errorf("%s: an empty value is not valid", ty)
		}
	}
}

// TestSchemaTypes: a schema with types decodes to them; one of text
// columns is written without them (the 1.0 schema) and decodes to nil
// types; an unknown type, an unknown flag or missing types are refused.
func TestSchemaTypes(t *testing.T) {
	s := &Schema{Columns: []string{"k", "n", "b"}, Key: []int{0}, Types: []ColumnType{TypeText, TypeNumber, TypeBool}}
	b := AppendSchema(nil, s)
	got, err := DecodeSchema(b, 0, 3)
	if err != nil || !slices.Equal(got.Types, s.Types) || !slices.Equal(got.Columns, s.Columns) || got.Type(1) != TypeNumber {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	text := AppendSchema(nil, &Schema{Columns: s.Columns, Key: s.Key, Types: []ColumnType{0, 0, 0}})
	if plain := AppendSchema(nil, &Schema{Columns: s.Columns, Key: s.Key}); !slices.Equal(text, plain) {
		t.Errorf("a schema of text columns differs from one without types")
	}
	if got, err := DecodeSchema(text, 0, 3); err != nil || got.Types != nil || got.Type(2) != TypeText {
		t.Errorf("text schema: %+v, %v", got, err)
	}
	bad := func(name string, b []byte) {
		if _, err := DecodeSchema(b, 0, 3); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	d := slices.Clone(b)
	d[len(d)-1] = 4
	bad("unknown type", d)
	d = slices.Clone(b)
	d[8] |= 2
	bad("unknown flag", d)
	bad("missing types", b[:len(b)-1])
	d = slices.Clone(text)
	d[8] = 1
	bad("flag without types", d)
}
