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
// reports false for anything else, which may still be an address. One
// pass over the bytes: a dot closes a byte, a digit adds to it.
func parseIPv4(b []byte) (a [4]byte, ok bool) {
	if len(b) < len("0.0.0.0") || len(b) > len("255.255.255.255") {
		return a, false
	}
	// v is the byte being read, n its digits; at most 15 digits do not
	// overflow v, and more than 3 make it over 255 (no leading zeros).
	var v, n, p uint
	for _, c := range b {
		if d := uint(c - '0'); d <= 9 {
			if n > 0 && v == 0 {
				return a, false // a leading zero
			}
			v = v*10 + d
			n++
			continue
		}
		if c != '.' || n == 0 || v > 255 || p >= 3 {
			return a, false
		}
		a[p] = byte(v)
		p++
		v, n = 0, 0
	}
	if p != 3 || n == 0 || v > 255 {
		return a, false
	}
	a[3] = byte(v)
	return a, true
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
