package parse

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func FuzzJSONField(f *testing.F) {
	f.Add([]byte(`{"host":"web-18","cust":"679127","src":"102.24.37.211","action":"login"}`), "src")
	f.Add([]byte(`{"a":{"b":[1,{"c":"]"}],"d":"x\"y"},"a.d":true}`), "a.d")
	f.Add([]byte(`{"s":"\ud83d\ude00\u00e9\n","n":-1.5e3,"z":null}`), "s")
	f.Add([]byte(`{"x":"]}`), "x")
	f.Add([]byte(`[{"a":1}]`), "a")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		val, kind, ok := JSONField(body, []byte(path))
		if !ok {
			return
		}
		if !within(body, val) {
			t.Fatalf("value %q not within body", val)
		}
		if !json.Valid(body) {
			return
		}
		// On a valid document the value must be valid JSON too, and
		// strings must decode as encoding/json decodes them.
		switch kind {
		case KindString, KindEscaped:
			lit := append(append([]byte{'"'}, val...), '"')
			var want string
			if err := json.Unmarshal(lit, &want); err != nil {
				t.Fatalf("string %s: %v", lit, err)
			}
			got := string(AppendUnquote(nil, val))
			if kind == KindString && got != string(val) {
				t.Fatalf("KindString %q has escapes", val)
			}
			if utf8.Valid(val) && got != want {
				t.Fatalf("AppendUnquote(%q) = %q, encoding/json gives %q", val, got, want)
			}
		case KindNumber, KindBool, KindNull, KindObject, KindArray:
			if !json.Valid(val) {
				t.Fatalf("kind %c value %q is not valid JSON", kind, val)
			}
		default:
			t.Fatalf("unknown kind %q", kind)
		}
	})
}

func FuzzKV(f *testing.F) {
	f.Add([]byte(`cust=679127 src=102.24.37.211 action=login`), "src")
	f.Add([]byte(`k="a \" cust=1" cust=3`), "cust")
	f.Fuzz(func(t *testing.T, msg []byte, key string) {
		v, ok := KV(msg, []byte(key))
		if ok && !within(msg, v) {
			t.Fatalf("value outside msg")
		}
		x := NewExtractor([]string{key, "cust", "src"})
		vals := make([][]byte, 3)
		x.Extract(msg, vals)
		if (vals[0] != nil) != ok || string(vals[0]) != string(v) {
			t.Fatalf("Extract %q = %q, KV = %q %v", key, vals[0], v, ok)
		}
		// The slow tokeniser is the reference.
		var ref []byte
		refOK := false
		EachKV(msg, func(k, val []byte) bool {
			if string(k) == key {
				ref, refOK = val, true
				return false
			}
			return true
		})
		if refOK != ok || string(ref) != string(v) {
			t.Fatalf("KV(%q, %q) = %q %v, EachKV gives %q %v", msg, key, v, ok, ref, refOK)
		}
	})
}

// FuzzEachArrayElem checks that every element of a valid JSON array is
// given, in order and with the bytes encoding/json reads, and that no
// input panics.
func FuzzEachArrayElem(f *testing.F) {
	for _, s := range []string{`[]`, `["a",1,true,null]`, `[{"x":[1,2]},["y"]]`, `["a\"b", -1.5e3 ]`, `["a",`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []json.RawMessage
		ok := EachArrayElem([]byte(s), func(v []byte, kind byte) bool {
			if kind == KindString || kind == KindEscaped {
				v = []byte(`"` + string(v) + `"`)
			}
			got = append(got, append(json.RawMessage(nil), v...))
			return true
		})
		var want []json.RawMessage
		if json.Unmarshal([]byte(s), &want) != nil || want == nil {
			return
		}
		if !ok || len(got) != len(want) {
			t.Fatalf("%s: %d elements (ok %v), want %d", s, len(got), ok, len(want))
		}
		for k := range want {
			if string(bytes.TrimSpace(want[k])) != string(got[k]) {
				t.Fatalf("%s: element %d is %s, want %s", s, k, got[k], want[k])
			}
		}
	})
}
