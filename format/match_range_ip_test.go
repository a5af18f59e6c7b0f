package format

import (
	"net/netip"
	"testing"
)

// FuzzParseIPv4 reads arbitrary text as ParseIPv4 and as net/netip: the
// same addresses, the same numbers, and AppendIPv4 writes them back as
// netip does.
func FuzzParseIPv4(f *testing.F) {
	for _, s := range []string{"10.1.2.3", "0.0.0.0", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3", "", ".", "1.2.3.4.", "::1", "1.2.3.-4", "0.0.0.00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ip, ok := ParseIPv4([]byte(s))
		a, err := netip.ParseAddr(s)
		want := err == nil && a.Is4()
		if ok != want {
			t.Fatalf("ParseIPv4(%q) = %v, netip says %v (%v)", s, ok, want, err)
		}
		if !ok {
			return
		}
		b := a.As4()
		if n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]); n != ip {
			t.Fatalf("ParseIPv4(%q) = %#x, netip gives %#x", s, ip, n)
		}
		if got := string(AppendIPv4(nil, ip)); got != a.String() {
			t.Fatalf("AppendIPv4(%#x) = %q, netip writes %q", ip, got, a.String())
		}
	})
}

func TestParseIPv4DoesNotAllocate(t *testing.T) {
	b := []byte("192.168.100.254")
	if n := testing.AllocsPerRun(100, func() {
		if ip, ok := ParseIPv4(b); !ok || ip != 0xc0a864fe {
			t.Fatal("ParseIPv4 failed")
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
