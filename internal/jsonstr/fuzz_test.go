package jsonstr

import "testing"

// FuzzAppendString checks that AppendString writes a JSON string that
// decodes to s (each invalid UTF-8 byte as U+FFFD), the same bytes as the
// byte-by-byte escaper, and the same as encoding/json.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s", "\n\x00\x1f\x7f", "ünï€😀", "\u2028\u2029", "a\xff\xfeb", "\xed\xa0\x80", "\xc3", "\xef\xbf\xbd"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		out := AppendString(make([]byte, 0, 8), s)
		checkJSONString(t, string(s), out)
		if string(AppendStringS(nil, string(s))) != string(out) {
			t.Fatalf("AppendStringS differs")
		}
		appendStrSame(t, s)
		likeEncodingJSON(t, s)
	})
}
