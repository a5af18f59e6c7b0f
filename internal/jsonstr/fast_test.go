package jsonstr

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// appendStrSame fails the test unless AppendString and the byte-by-byte
// escaper append the same bytes for s, after a prefix and into a buffer
// too small for the result, and that s is kept as is if NeedsEscape says
// it can be. NeedsEscape also rejects multi-byte UTF-8, which is kept; for
// ASCII it must be exact.
func appendStrSame(t *testing.T, s []byte) {
	t.Helper()
	want := string(append(appendEscapedSlow([]byte("x\""), s), '"'))
	kept := want == "x\""+string(s)+"\""
	if ne := NeedsEscape(s); !ne && !kept || ne && kept && ascii(s) {
		t.Fatalf("NeedsEscape(%q) = %v, but AppendString gives %s", s, ne, want)
	}
	for _, dst := range [][]byte{[]byte("x"), append(make([]byte, 0, 64), 'x')} {
		if got := string(AppendString(dst, s)); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendStringFast(t *testing.T) {
	for _, s := range []string{"", "a", "ab", "abc", "abcd", "plain ascii text that is long enough", "quote\"in", "back\\slash", "ctl\x01x", "tab\there",
		"h\u00e9llo w\u00f6rld", "bad \xff utf8", "0123456\"", "01234567\\", "\u2028 line sep", strings.Repeat("x", 17) + "\x1f",
		"\xe2\x80", "\xe2\x80\xa8", "a\xe2\x80\xa9", "\xff\xfe\xfd", "\x7f\x00"} {
		appendStrSame(t, []byte(s))
	}
	// Every length up to 80 with one byte of each class at each position,
	// so that every word and 16-byte block, the overlapping last ones and
	// the short cases meet it.
	for n := 1; n <= 80; n++ {
		for pos := range n {
			for _, c := range []byte{0, 0x1f, ' ', '"', '\\', 0x7f, 0x80, 0xc3, 0xe2, 0xff} {
				s := []byte(strings.Repeat("abcdefgh", 10)[:n])
				s[pos] = c
				appendStrSame(t, s)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\\x00\x1f\x7f\x80\xbf\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xff")
	for range 20000 {
		s := make([]byte, rng.IntN(80))
		for i := range s {
			if rng.IntN(4) == 0 {
				s[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				s[i] = byte('a' + rng.IntN(26))
			}
		}
		appendStrSame(t, s)
	}
}

func ascii(s []byte) bool {
	for _, c := range s {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// TestNeedsEscapeLong: the 16- and 32-byte checks agree with the 8-byte
// one at every length from 16 to 100 with a byte of each value at each
// position.
func TestNeedsEscapeLong(t *testing.T) {
	for n := 16; n <= 100; n++ {
		s := []byte(strings.Repeat("abcdefgh", 13)[:n])
		if needsEscapeLong(&s[0], n) {
			t.Fatalf("length %d: plain text needs escaping", n)
		}
		for pos := range n {
			for c := range 256 {
				s[pos] = byte(c)
				want := needsEscapeWords(s)
				for _, f := range needsEscapeLongs(n) {
					if got := f.fn(&s[0], n); got != want {
						t.Fatalf("%s, length %d, byte %#x at %d: %v, want %v", f.name, n, c, pos, got, want)
					}
				}
			}
			s[pos] = 'a'
		}
	}
}
