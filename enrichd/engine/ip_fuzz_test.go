package engine

import (
	"net/netip"
	"testing"
)

// FuzzParseIP: parseIP takes exactly the addresses netip.ParseAddr takes,
// and gives the same address (IPv4-mapped IPv6 unmapped), but for keys
// over 64 bytes (an IPv6 address with a long zone), which it refuses.
func FuzzParseIP(f *testing.F) {
	for _, s := range []string{"10.1.2.3", "0.0.0.0", "255.255.255.255", "256.1.2.3", "010.1.2.3", "1.2.3", "1.2.3.4.5",
		"1.2.3.04", "1.2.3.4x", "::1", "0db8::1", "::ffff:10.0.0.1", "1..2.3", ".1.2.3", "1.2.3.", "99.999.9.9", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseIP(b)
		if len(b) > 64 {
			if ok {
				t.Fatalf("parseIP took %d bytes: %q", len(b), b)
			}
			return
		}
		want, err := netip.ParseAddr(string(b))
		if ok != (err == nil) || ok && got != want.Unmap() {
			t.Fatalf("parseIP(%q) = %v, %v; netip: %v, %v", b, got, ok, want, err)
		}
		// A dotted quad is parsed without netip.
		if a, ok4 := parseIPv4(b); ok4 != (err == nil && want.Is4()) || ok4 && netip.AddrFrom4(a) != want {
			t.Fatalf("parseIPv4(%q) = %v, %v; netip: %v, %v", b, a, ok4, want, err)
		}
	})
}
