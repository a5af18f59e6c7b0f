// Package prefetch starts loading cache lines ahead of their use.
//
// A batch lookup knows the addresses of its next reads (slots, records,
// search tree nodes) one stage ahead. Reading them with plain loads keeps
// only as many misses in flight as the CPU's reorder window holds, since a
// load that misses holds up every instruction after it from retiring;
// prefetch instructions retire at once, so every miss of a stage can be in
// flight together. On this kind of machine that makes a stage of random
// reads 1.5 to 2.5 times faster.
package prefetch

// Lines starts loading the cache line of each address in addrs into every
// level of cache. It is a hint: it never faults, whatever the addresses.
// Where the architecture has no prefetch instruction it does nothing.
func Lines(addrs []uintptr) {
	if len(addrs) > 0 {
		lines(&addrs[0], len(addrs))
	}
}

// Batch gathers addresses to prefetch and prefetches them 64 at a time,
// for callers that do not know how many there will be. The zero Batch is
// empty.
type Batch struct {
	n     int
	addrs [64]uintptr
}

// Add adds addr, prefetching the batch first when it is full.
func (b *Batch) Add(addr uintptr) {
	if b.n == len(b.addrs) {
		b.Flush()
	}
	b.addrs[b.n] = addr
	b.n++
}

// Flush prefetches the addresses added since the last Flush.
func (b *Batch) Flush() {
	Lines(b.addrs[:b.n])
	b.n = 0
}
