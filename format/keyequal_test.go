package format

import (
	"bytes"
	"testing"
)

// TestEqualKey compares equalKey with bytes.Equal on every pair of keys
// that differ in one byte, or in length, for lengths up to past the
// short-key paths.
func TestEqualKey(t *testing.T) {
	for n := 0; n <= 40; n++ {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte('a' + i)
		}
		if !equalKey(a, bytes.Clone(a)) {
			t.Fatalf("%q: not equal to its copy", a)
		}
		for i := range a {
			b := bytes.Clone(a)
			b[i] ^= 0x20
			if equalKey(a, b) {
				t.Fatalf("%q and %q: equal", a, b)
			}
		}
		if n > 0 && equalKey(a, a[:n-1]) {
			t.Fatalf("%q and %q: equal", a, a[:n-1])
		}
	}
}

// FuzzEqualKey checks equalKey against bytes.Equal.
func FuzzEqualKey(f *testing.F) {
	f.Add([]byte("1234567"), []byte("1234568"))
	f.Add([]byte("abc"), []byte("abd"))
	f.Add([]byte("someone@example.org"), []byte("someone@example.org"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if got, want := equalKey(a, b), bytes.Equal(a, b); got != want {
			t.Fatalf("equalKey(%q, %q) = %v", a, b, got)
		}
		if !equalKey(a, bytes.Clone(a)) {
			t.Fatalf("%q: not equal to its copy", a)
		}
	})
}
