package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// checkJSONString verifies that out is a valid JSON string literal that
// decodes to in with each byte of invalid UTF-8 replaced by U+FFFD, as a
// conversion to runes (and encoding/json) replaces them.
func checkJSONString(t testing.TB, in string, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("AppendString(%q) = %s: invalid JSON", in, out)
	}
	var got string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("AppendString(%q) = %s: %v", in, out, err)
	}
	if want := string([]rune(in)); got != want {
		t.Fatalf("AppendString(%q) decodes to %q, want %q", in, got, want)
	}
}

func TestAppendString(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		out := AppendString([]byte("x"), []byte(in))
		if string(out) != "x"+want {
			t.Errorf("AppendString(%q) = %s, want %s", in, out[1:], want)
		}
		if s := AppendStringS([]byte("x"), in); string(s) != string(out) {
			t.Errorf("AppendStringS(%q) = %s, want %s", in, s, out)
		}
		checkJSONString(t, in, out[1:])
	}
	f("", `""`)
	f("plain ascii ~!@#$%^&*()", `"plain ascii ~!@#$%^&*()"`)
	f(`q"b\s/`, `"q\"b\\s/"`)
	f("\n\r\t\x00\x01\x1f\x7f", `"\n\r\t\u0000\u0001\u001f`+"\x7f"+`"`)
	f("<html>&amp;", `"<html>&amp;"`)
	f("ünïcødé €😀", `"ünïcødé €😀"`)
	f("\u2028x\u2029", `"\u2028x\u2029"`)
	f("\xff", `"\ufffd"`)
	f("a\xff\xfe\xfdb", `"a\ufffd\ufffd\ufffdb"`)
	f("a\xffé\xfeb", `"a\ufffdé\ufffdb"`)
	f("\xc3", `"\ufffd"`)                     // truncated 2-byte sequence
	f("\xe2\x82", `"\ufffd\ufffd"`)           // truncated 3-byte sequence
	f("\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`) // surrogate half
	f("\xc0\xaf", `"\ufffd\ufffd"`)           // overlong
	f("\xef\xbf\xbd", "\"\uFFFD\"")           // a real U+FFFD stays as is
	f("\xf4\x90\x80\x80", `"\ufffd\ufffd\ufffd\ufffd"`)
	f("x\x00\xff\x00", `"x\u0000\ufffd\u0000"`)

	// Every single byte and every byte pair.
	for a := 0; a < 256; a++ {
		checkJSONString(t, string([]byte{byte(a)}), AppendString(nil, []byte{byte(a)}))
		for b := 0; b < 256; b += 7 {
			in := []byte{byte(a), byte(b), 'z'}
			checkJSONString(t, string(in), AppendString(nil, in))
		}
	}
}

func TestAppendKey(t *testing.T) {
	if got := string(AppendKey(nil, []byte(`k"`))); got != `"k\"":` {
		t.Errorf("AppendKey = %s", got)
	}
	if got := string(AppendKeyS([]byte("{"), "k")); got != `{"k":` {
		t.Errorf("AppendKeyS = %s", got)
	}
}

// likeEncodingJSON fails the test unless AppendString writes s as
// encoding/json does without HTML escaping, but for \b and \f, which it
// writes as \u0008 and \u000c.
func likeEncodingJSON(t testing.TB, s []byte) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(s)); err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(`\\`, `\\`, `\b`, `\u0008`, `\f`, `\u000c`).Replace(strings.TrimSuffix(b.String(), "\n"))
	if got := string(AppendString(nil, s)); got != want {
		t.Fatalf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
	}
}

// TestLikeEncodingJSON: every byte, every pair of bytes, and strings of
// each kind are written as encoding/json writes them (invalid UTF-8
// included), <>& as they are.
func TestLikeEncodingJSON(t *testing.T) {
	for a := 0; a < 256; a++ {
		likeEncodingJSON(t, []byte{byte(a)})
		for b := 0; b < 256; b++ {
			likeEncodingJSON(t, []byte{byte(a), byte(b), 'z'})
		}
	}
	for _, s := range []string{"<script>&amp;</script>", "\u2028\u2029", "a\xff\xfe\xfdb", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ünïcødé €😀", "\x7f\x00\x1f", strings.Repeat("é\xff", 100)} {
		likeEncodingJSON(t, []byte(s))
	}
}

// TestZeroAllocs: appending into a buffer with room allocates nothing.
func TestZeroAllocs(t *testing.T) {
	out := make([]byte, 0, 1024)
	in := []byte("cust=679127 src=\"ünï\xffcødé\" \n\t\u2028 action=login")
	check := func(name string, fn func()) {
		t.Helper()
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, n)
		}
	}
	check("AppendString", func() { out = AppendString(out[:0], in) })
	check("AppendStringS", func() { out = AppendStringS(out[:0], "host") })
	check("Object", func() {
		o := Object{Buf: out[:0]}
		o.Begin()
		o.String("host", in)
		o.Int("sev", 6)
		out = o.End()
	})
}

func BenchmarkAppendString(b *testing.B) {
	for _, tc := range []struct{ name, s string }{
		{"ascii", "cust=679127 src=102.24.37.211 action=login user=alice path=/api/v1/items?id=42"},
		{"utf8", "ünïcødé tëxt — with some “quotes” and € signs, 日本語のテキスト"},
		{"escapes", "line1\nline2\t\"quoted\" \\ back\x01slash\xff"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := []byte(tc.s)
			dst := make([]byte, 0, 4*len(s)+8)
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendString(dst[:0], s)
			}
		})
	}
}
