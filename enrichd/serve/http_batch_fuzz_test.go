package serve

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzBatchKeys fuzzes the _batch body's key scanner: it never panics,
// leaves the body as it was, reads the same keys twice (the check pass
// and the lookup pass), and reads from a valid JSON array of strings,
// numbers and nulls the keys encoding/json decodes.
func FuzzBatchKeys(f *testing.F) {
	for _, s := range []string{`["1", "nope", 3, null, "\u0035"]`, "1\r\nnope\n3\n\n", `[]`, ` [ "a\"b\\c\/\n" , -1.5e3 ] `,
		`["\ud83d\ude00", "\ud800"]`, `["1",`, `[1 2]`, `["x"] y`, "[\"\x01\"]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		scan := func() ([]string, error) {
			var keys []string
			ks := newKeyScanner(body, nil)
			for {
				k, null, ok, err := ks.next()
				if err != nil {
					return keys, err
				}
				if !ok {
					return keys, nil
				}
				if null {
					keys = append(keys, "<null>")
				} else {
					keys = append(keys, string(k))
				}
			}
		}
		keys, err := scan()
		again, err2 := scan()
		if !bytes.Equal(body, orig) {
			t.Fatalf("the scanner wrote its body")
		}
		if (err == nil) != (err2 == nil) || len(keys) != len(again) {
			t.Fatalf("two passes differ: %q %v, %q %v", keys, err, again, err2)
		}
		for i := range keys {
			if keys[i] != again[i] {
				t.Fatalf("two passes differ: %q, %q", keys, again)
			}
		}
		var raw []json.RawMessage
		if !utf8.Valid(body) || json.Unmarshal(body, &raw) != nil || !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
			return
		}
		var want []string
		for _, r := range raw {
			switch r[0] {
			case '"':
				var s string
				if err := json.Unmarshal(r, &s); err != nil {
					t.Fatal(err)
				}
				want = append(want, s)
			case 'n':
				want = append(want, "<null>")
			case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				want = append(want, string(r))
			default:
				return // objects, arrays, booleans: not keys
			}
		}
		if err != nil {
			t.Fatalf("%q: %v, encoding/json reads %q", body, err, want)
		}
		if len(keys) != len(want) {
			t.Fatalf("%q: %q, encoding/json reads %q", body, keys, want)
		}
		for i := range keys {
			if keys[i] != want[i] {
				t.Fatalf("%q: key %d %q, encoding/json reads %q", body, i, keys[i], want[i])
			}
		}
	})
}
