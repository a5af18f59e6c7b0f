package engine

import (
	"net/netip"
	"testing"
)

// parseIP takes every IPv6 address, not only those whose first group
// happens to look like a decimal byte.
func TestParseIP(t *testing.T) {
	for _, s := range []string{"10.1.2.3", "0.0.0.0", "255.255.255.255", "::1", "::", "2001:db8::1",
		"fd6c:7574:2a:f02c:788e:1e45:3c5a:709", "fe80::1", "0db8::1", "1:2:3:4:5:6:7:8", "::ffff:10.0.0.1"} {
		want := netip.MustParseAddr(s).Unmap()
		got, ok := parseIP([]byte(s))
		if !ok || got != want {
			t.Errorf("parseIP(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "10.1.2", "10.1.2.3.4", "010.1.2.3", "256.1.2.3", "1.2.3.4x", "abc", "fd6c::1::2", "10.1.2.3/8", "x:y"} {
		if got, ok := parseIP([]byte(s)); ok {
			t.Errorf("parseIP(%q) = %v, want no address", s, got)
		}
	}
}
