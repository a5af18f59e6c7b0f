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
