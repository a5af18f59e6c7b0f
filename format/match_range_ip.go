package format

// IPv4 range tables (FORMAT.md, "IPv4 range tables")
//
// A range table whose from,to columns hold IPv4 addresses (10.1.2.0,
// 10.1.2.255) stores each bound as the address's 32-bit number in the
// RANGE section, as any integer, and has FeatureRangeIPv4: a lookup key is
// an address in dotted-quad text, read by ParseIPv4. IPv6 bounds do not
// fit the section's signed 64-bit bounds; they are not supported.

// FeatureRangeIPv4: the RANGE section's bounds are IPv4 addresses
// (version 1.2, with FeatureRange); a lookup key is dotted-quad text.
const FeatureRangeIPv4 uint32 = 1 << 7

// ParseIPv4 reads an IPv4 address in dotted-quad text (four decimal
// numbers of 0 to 255 joined by dots, no leading zeros, as
// net/netip.ParseAddr reads one) and returns its number. It does not
// allocate.
func ParseIPv4(b []byte) (uint32, bool) {
	var ip uint32
	part, digits := uint32(0), 0
	parts := 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 {
				return 0, false
			}
			ip = ip<<8 | part
			parts++
			if parts > 4 || i < len(b) && parts == 4 {
				return 0, false
			}
			part, digits = 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || digits > 0 && part == 0 {
			return 0, false // not a digit, or a leading zero
		}
		part = 10*part + uint32(c-'0')
		digits++
		if part > 255 {
			return 0, false
		}
	}
	return ip, parts == 4
}

// AppendIPv4 appends the dotted-quad text of the address of number ip.
func AppendIPv4(dst []byte, ip uint32) []byte {
	for i := 3; i >= 0; i-- {
		v := byte(ip >> (8 * i))
		if v >= 100 {
			dst = append(dst, '0'+v/100)
		}
		if v >= 10 {
			dst = append(dst, '0'+v/10%10)
		}
		dst = append(dst, '0'+v%10)
		if i > 0 {
			dst = append(dst, '.')
		}
	}
	return dst
}
