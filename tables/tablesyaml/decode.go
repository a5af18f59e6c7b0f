package tablesyaml

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// specKeys returns the handlers of the tables.yaml keys of spec, a pointer
// to one of the compilers' option structs: one key per field with a json
// name (the same name the options are digested under), each decoding its
// value by the field's type. prefix is the path of the struct in errors.
// A field of a type tables.yaml cannot hold is an error in the spec, not
// in the file, and panics.
func specKeys(d *config.Decoder, prefix string, spec any) config.Keys {
	rv := reflect.ValueOf(spec).Elem()
	rt := rv.Type()
	keys := config.Keys{}
	for i := range rt.NumField() {
		sf := rt.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		fv, field := rv.Field(i), config.Field(prefix, name)
		if !decodable(fv.Type()) {
			panic(fmt.Sprintf("tablebuild: %s.%s (%s) cannot be read from tables.yaml", rt, sf.Name, fv.Type()))
		}
		keys[name] = func(v *yaml.Node) { decodeValue(d, v, field, fv) }
	}
	return keys
}

// isText reports whether values of t are read from text.
func isText(t reflect.Type) bool { return reflect.PointerTo(t).Implements(textUnmarshalerType) }

// decodable reports whether decodeValue reads values of type t.
func decodable(t reflect.Type) bool {
	switch {
	case isText(t):
		return true
	case t.Kind() == reflect.String, t.Kind() == reflect.Bool, t.Kind() == reflect.Int:
		return true
	case t.Kind() == reflect.Slice:
		return t.Elem().Kind() == reflect.String || isText(t.Elem())
	case t.Kind() == reflect.Map:
		return t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
	case t.Kind() == reflect.Pointer:
		return t.Elem().Kind() == reflect.Array && t.Elem().Elem().Kind() == reflect.Float64
	}
	return false
}

// decodeValue reads the value v of field into fv: text types through
// their UnmarshalText, strings (never empty), booleans, integers, lists of
// strings or of text values (a single string is a list of one), mappings
// of names to strings, and fixed-length lists of numbers.
func decodeValue(d *config.Decoder, v *yaml.Node, field string, fv reflect.Value) {
	t := fv.Type()
	switch {
	case isText(t):
		if s, ok := d.String(v, field); ok {
			if err := fv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				d.Errorf(v, field, "%v", err)
			}
		}
	case t.Kind() == reflect.String:
		if s, ok := d.String(v, field); ok {
			fv.SetString(s)
		}
	case t.Kind() == reflect.Bool:
		if b, ok := d.Bool(v, field); ok {
			fv.SetBool(b)
		}
	case t.Kind() == reflect.Int:
		if n, ok := d.Int(v, field); ok {
			fv.SetInt(int64(n))
		}
	case t.Kind() == reflect.Slice:
		ss, ok := d.Strings(v, field)
		if !ok {
			return
		}
		out := reflect.MakeSlice(t, 0, len(ss))
		for i, s := range ss {
			e := reflect.New(t.Elem())
			if t.Elem().Kind() == reflect.String {
				e.Elem().SetString(s)
			} else if err := e.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				item := v
				if v.Kind == yaml.SequenceNode {
					item = v.Content[i]
				}
				d.Errorf(item, config.Index(field, i), "%v", err)
				continue
			}
			out = reflect.Append(out, e.Elem())
		}
		fv.Set(out)
	case t.Kind() == reflect.Map:
		pairs, ok := d.Pairs(v, field)
		if !ok {
			return
		}
		m := reflect.MakeMapWithSize(t, len(pairs))
		for _, p := range pairs {
			m.SetMapIndex(reflect.ValueOf(p.Key).Convert(t.Key()), reflect.ValueOf(p.Value).Convert(t.Elem()))
		}
		fv.Set(m)
	case t.Kind() == reflect.Pointer:
		arr := reflect.New(t.Elem())
		want := t.Elem().Len()
		if v.Kind != yaml.SequenceNode || len(v.Content) != want {
			d.Errorf(v, field, "must be a list of %d numbers", want)
			return
		}
		for i, item := range v.Content {
			f, ok := d.Float(item, config.Index(field, i))
			if !ok {
				return
			}
			arr.Elem().Index(i).SetFloat(f)
		}
		fv.Set(arr)
	}
}
