package format

import (
	"bytes"
	"errors"
	"testing"
)

func TestNormalizeSuffix(t *testing.T) {
	for in, want := range map[string]string{
		"evil.com": "evil.com", "*.Evil.COM": "evil.com", ".evil.com": "evil.com",
		"evil.com.": "evil.com", "*.evil.com.": "evil.com", "ÉVIL.fr": "évil.fr", "com": "com",
	} {
		got, err := NormalizeSuffix(nil, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("NormalizeSuffix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]error{
		"": ErrSuffixEmpty, ".": ErrSuffixEmpty, "*.": ErrSuffixEmpty, "*": ErrSuffixWildcard,
		"a..b": ErrSuffixLabel, "a..": ErrSuffixLabel, "..a": ErrSuffixLabel, "*.*.a": ErrSuffixWildcard, "a.*.b": ErrSuffixWildcard,
	} {
		if _, err := NormalizeSuffix(nil, []byte(in)); !errors.Is(err, want) {
			t.Errorf("NormalizeSuffix(%q): %v, want %v", in, err, want)
		}
	}
}

// FuzzNormalizeSuffix: a normalised key is its own normal form, has no
// empty label, and every lookup of it (SuffixQuery) is itself.
func FuzzNormalizeSuffix(f *testing.F) {
	for _, s := range []string{"evil.com", "*.A.b", ".x.", "a..b", "É.fr", "*", "\xff.com"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		n, err := NormalizeSuffix(nil, key)
		if err != nil {
			return
		}
		again, err := NormalizeSuffix(nil, n)
		if err != nil || !bytes.Equal(again, n) {
			t.Fatalf("%q normalises to %q, which normalises to %q, %v", key, n, again, err)
		}
		if q := SuffixQuery(nil, n); !bytes.Equal(q, n) {
			t.Fatalf("the query of key %q is %q", n, q)
		}
		if Labels(n) < 1 || bytes.HasPrefix(n, []byte(".")) || bytes.HasSuffix(n, []byte(".")) {
			t.Fatalf("%q: bad normal form %q", key, n)
		}
	})
}

// FuzzDecodeSuffixSection decodes arbitrary SUFFIX sections: an error,
// or a mask that encodes back to the same bytes.
func FuzzDecodeSuffixSection(f *testing.F) {
	f.Add(AppendSuffixSection(nil, 0b110, 0), uint64(3))
	f.Add(AppendSuffixSection(nil, 0b110, SuffixTimeBound), uint64(3))
	f.Add(AppendSuffixSection(nil, 0, 0), uint64(0))
	f.Add([]byte{1, 2, 3}, uint64(1))
	f.Fuzz(func(t *testing.T, b []byte, rows uint64) {
		mask, flags, err := DecodeSuffixSection(b, 0, rows)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendSuffixSection(nil, mask, flags), b) {
			t.Fatalf("%x decodes to mask %#x, which encodes differently", b, mask)
		}
	})
}
