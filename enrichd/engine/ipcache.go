package engine

import (
	"encoding/binary"
	"net/netip"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// ipCacheSize is the number of networks an mmdb rule's cache holds per
// worker.
const ipCacheSize = 2048

// The cache measures its hit rate over ipCacheWindow addresses. A window
// with fewer than one hit in ipCacheMinRate turns it off for ipCacheRest
// addresses, after which it is tried again: checking the cache costs about
// a memory read, which many hits repay (logs repeat addresses) but which a
// stream of addresses that rarely repeat a network only adds to each
// lookup.
const (
	ipCacheWindow  = 16384
	ipCacheMinRate = 8
	ipCacheRest    = 16 * ipCacheWindow
)

type ipCacheEntry struct {
	prefix netip.Prefix
	idx    int
	valid  bool
	found  bool
}

// ipCache remembers recent mmdb matches by network. It is tied to one
// table set generation: the values alias the mapping, so the cache is
// cleared whenever the generation changes.
type ipCache struct {
	gen   uint64
	slots []ipCacheEntry
	vals  []mmdb.Value
	// the hit rate: addresses checked and answered in this window; while
	// the cache is off, rest counts down the addresses until it is tried
	// again.
	probes, hits, rest int
}

// on reports whether the batch about to be looked up uses the cache.
func (c *ipCache) on() bool { return c.rest <= 0 }

// account records a batch of n addresses, of which hits were answered by
// the cache (when it was on), and turns the cache off or on again.
func (c *ipCache) account(n, hits int) {
	if c.rest > 0 {
		c.rest -= n
		return
	}
	c.probes += n
	c.hits += hits
	if c.probes >= ipCacheWindow {
		if c.hits*ipCacheMinRate < c.probes {
			c.rest = ipCacheRest
		}
		c.probes, c.hits = 0, 0
	}
}

func (c *ipCache) reset(nf int, gen uint64) {
	if c.slots == nil {
		c.slots = make([]ipCacheEntry, ipCacheSize)
		c.vals = make([]mmdb.Value, ipCacheSize*nf)
		for i := range c.slots {
			c.slots[i].idx = i
		}
	}
	for i := range c.slots {
		c.slots[i].valid = false
	}
	clear(c.vals)
	c.gen = gen
}

// slot returns the entry for ip's /24 (IPv4) or /48 (IPv6).
func (c *ipCache) slot(ip netip.Addr) *ipCacheEntry {
	var h uint64
	if ip.Is4() {
		a := ip.As4()
		h = uint64(a[0])<<16 | uint64(a[1])<<8 | uint64(a[2])
	} else {
		a := ip.As16()
		h = binary.BigEndian.Uint64(a[:8]) >> 16
	}
	h *= 0x9E3779B97F4A7C15
	return &c.slots[h>>(64-11)]
}

// copyValues copies the field values of one lookup, as copy does for
// len(dst) values. A loop of assignments: copy of values that hold
// pointers calls typedslicecopy, which costs several times the moves for
// the few values of a lookup.
func copyValues(dst, src []mmdb.Value) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = src[i]
	}
}
