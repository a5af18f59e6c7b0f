package engine

import (
	"net/netip"
)

// parseIP parses an IPv4 dotted quad without allocating, falling back to
// netip for anything else.
func parseIP(b []byte) (netip.Addr, bool) {
	var a [4]byte
	part, val, digits := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits > 0 && val == 0 {
				return parseIPSlow(b) // a leading zero: only IPv6 ("0db8:...") has them
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return parseIPSlow(b) // IPv6 ("2001:db8::1"), or not an address
			}
		case c == '.' && digits > 0 && part < 3:
			a[part] = byte(val)
			part++
			val, digits = 0, 0
		case c == ':':
			return parseIPSlow(b)
		default:
			return parseIPSlow(b) // IPv6 ("fd00::1"), or not an address
		}
	}
	if part != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	a[3] = byte(val)
	return netip.AddrFrom4(a), true
}

func parseIPSlow(b []byte) (netip.Addr, bool) {
	if len(b) > 64 {
		return netip.Addr{}, false
	}
	var s [64]byte
	n := copy(s[:], b)
	ip, err := netip.ParseAddr(string(s[:n]))
	return ip.Unmap(), err == nil
}
