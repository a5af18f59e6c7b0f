package engine

import (
	"net/netip"
)

// parseIP parses an IPv4 dotted quad without allocating, falling back to
// netip for anything else (IPv6, and what is not an address).
func parseIP(b []byte) (netip.Addr, bool) {
	if a, ok := parseIPv4(b); ok {
		return netip.AddrFrom4(a), true
	}
	return parseIPSlow(b)
}

// parseIPv4 parses four decimal bytes of one to three digits, without
// leading zeros, separated by dots: the IPv4 addresses netip takes. It
// reports false for anything else, which may still be an address.
func parseIPv4(b []byte) (a [4]byte, ok bool) {
	i := 0
	for p := range 4 {
		if p > 0 {
			if i >= len(b) || b[i] != '.' {
				return a, false
			}
			i++
		}
		if i >= len(b) || b[i]-'0' > 9 {
			return a, false
		}
		v := uint(b[i] - '0')
		i++
		if i < len(b) && b[i]-'0' <= 9 {
			if v == 0 {
				return a, false // a leading zero
			}
			v = v*10 + uint(b[i]-'0')
			i++
			if i < len(b) && b[i]-'0' <= 9 {
				v = v*10 + uint(b[i]-'0')
				i++
				if v > 255 {
					return a, false
				}
			}
		}
		a[p] = byte(v)
	}
	return a, i == len(b)
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
