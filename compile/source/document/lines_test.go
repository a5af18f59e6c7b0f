package document

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// TestLineCounterUTF8: the line counter finds the first invalid UTF-8
// byte of a stream however its reads cut it, characters cut in two and
// one cut off by the end included.
func TestLineCounterUTF8(t *testing.T) {
	pieces := []string{"a", "\n", "é", "日本", "🚀", "\xff", "\xe2\x82", "\xf0\x9f\x9a", "\xed\xa0\x80", "\xc0\xaf", "\x80", "\xf4\x90\x80\x80"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var b bytes.Buffer
		for range rng.IntN(12) {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(3) > 0 {
				p = pieces[rng.IntN(5)] // mostly valid
			}
			b.WriteString(p)
		}
		data := b.Bytes()
		want := int64(-1)
		if !utf8.Valid(data) {
			want = int64(firstInvalid(data))
		}
		for name, r := range map[string]io.Reader{
			"whole":    bytes.NewReader(data),
			"one byte": iotest.OneByteReader(bytes.NewReader(data)),
			"halves":   iotest.HalfReader(bytes.NewReader(data)),
			"data+EOF": iotest.DataErrReader(bytes.NewReader(data)),
		} {
			c := newLineCounter(r)
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Fatal(err)
			}
			if c.bad != want {
				t.Fatalf("%d %s: %q: bad %d, want %d", i, name, data, c.bad, want)
			}
		}
	}
}
