package mmdb

import (
	"net/netip"
	"strconv"
)

// AliasNetworks are the IPv6 networks that MaxMind's writers make aliases
// of the IPv4 space (::/96) in IPv6 trees: IPv4-mapped addresses, Teredo
// (the IPv4 address in bits 32-63) and 6to4 (bits 16-47).
var AliasNetworks = []netip.Prefix{
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2002::/16"),
}

// IPv4Aliases returns the networks of AliasNetworks whose search tree
// record leads to the IPv4 root node, so that their addresses find IPv4
// data. A file without them answers those addresses from its IPv6 data.
func (r *Reader) IPv4Aliases() []netip.Prefix {
	t := &r.tree
	if r.db == nil || t.ipv4Only || t.v4Depth != 96 || t.v4Start >= t.nodeCount {
		return nil
	}
	var out []netip.Prefix
	for _, p := range AliasNetworks {
		a := p.Addr().As16()
		node := uint(0)
		for i := 0; i < p.Bits() && node < t.nodeCount; i++ {
			node = t.child(node, uint(a[i/8]>>(7-i%8))&1)
		}
		if node == t.v4Start {
			out = append(out, p)
		}
	}
	return out
}

// AliasString writes an alias network the usual way: ::ffff:0:0/96 for
// the IPv4-mapped one (netip writes ::ffff:0.0.0.0/96).
func AliasString(p netip.Prefix) string {
	if p.Addr().Is4In6() {
		return "::ffff:0:0/" + strconv.Itoa(p.Bits())
	}
	return p.String()
}
