package mmdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"unsafe"

	damage "github.com/lutkit/lutkit/internal/corrupt"
	"github.com/lutkit/lutkit/internal/prefetch"
)

// notFound is the offset of a Match without a record.
const notFound = uint(math.MaxUint)

// ErrIPv6InIPv4 is the lookup error of an IPv6 address in a database of
// IPv4 networks only (ip_version 4): it can hold no record for it.
var ErrIPv6InIPv4 = errors.New("an IPv6 address in an IPv4-only database")

var (
	errInvalidIP   = errors.New("mmdb: invalid IP address")
	errInvalidNode = damage.New("invalid MMDB: invalid node in search tree")
	errBadPointer  = damage.New("invalid MMDB: search tree points past the data section")
)

// searchTree is the decoded shape of the search tree, resolved once at open.
type searchTree struct {
	nodes     []byte // the search tree
	nodeCount uint
	recSize   uint // record size in bits: 24, 28 or 32
	ipv4Only  bool
	v4Start   uint // node where IPv4 lookups start
	v4Depth   int  // its depth (96 in an IPv4 tree)
	// v4Top[a>>(32-v4TopBits)] is where the walk of IPv4 address a stands
	// after its first v4TopBits bits: the node (or record) reached. Nil for
	// small trees. A walk that reached a record (node >= nodeCount) has
	// the bits it took in v4TopShort at the same index. Half the size of
	// node<<8|bits in a uint64, the table more often stays in the cache.
	v4Top      []uint32
	v4TopShort []uint8
}

// v4TopBits is how many leading bits of an IPv4 address v4Top resolves in
// one read instead of as many dependent node reads.
const v4TopBits = 16

// buildV4Top fills v4Top.
func (t *searchTree) buildV4Top() {
	if t.v4Depth < 96 || t.v4Start >= t.nodeCount {
		return
	}
	top := make([]uint32, 1<<v4TopBits)
	short := make([]uint8, 1<<v4TopBits)
	for p := range top {
		node, j := t.v4Start, 0
		for ; j < v4TopBits && node < t.nodeCount; j++ {
			node = t.child(node, uint(p>>(v4TopBits-1-j))&1)
		}
		top[p] = uint32(node) // a record value: at most 32 bits
		if node >= t.nodeCount {
			short[p] = uint8(j)
		}
	}
	t.v4Top, t.v4TopShort = top, short
}

func (t *searchTree) init(buf []byte, m Metadata) error {
	switch m.RecordSize {
	case 24, 28, 32:
	default:
		return fmt.Errorf("invalid MMDB: unsupported record size %d", m.RecordSize)
	}
	t.recSize = m.RecordSize
	t.nodeCount = m.NodeCount
	size := m.NodeCount * (m.RecordSize / 4)
	if size > uint(len(buf)) {
		return errors.New("invalid MMDB: search tree exceeds the file")
	}
	t.nodes = buf[:size:size]
	t.ipv4Only = m.IPVersion != 6
	if t.ipv4Only {
		t.v4Start, t.v4Depth = 0, 96
		return nil
	}
	node, i := uint(0), 0
	for ; i < 96 && node < t.nodeCount; i++ {
		node = t.child(node, 0)
	}
	t.v4Start, t.v4Depth = node, i
	return nil
}

// child returns record bit (0 left, 1 right) of node, which must be below
// nodeCount.
func (t *searchTree) child(node, bit uint) uint {
	switch t.recSize {
	case 24:
		o := node*6 + bit*3
		b := t.nodes[o : o+3]
		return uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2])
	case 28:
		o := node*7 + bit*3
		w := binary.BigEndian.Uint32(t.nodes[o : o+4])
		left := 1 - bit
		return uint((w>>(left*8))&0x00FFFFFF | (w<<(left*20))&0x0F000000)
	default:
		o := node*8 + bit*4
		return uint(binary.BigEndian.Uint32(t.nodes[o : o+4]))
	}
}

// prefetchTop starts loading the v4Top entries that start will read for
// the IPv4 addresses of ips.
func (t *searchTree) prefetchTop(ips []netip.Addr, pf *[batchWalk]uintptr) {
	if t.v4Top == nil {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(t.v4Top)))
	n := 0
	for _, ip := range ips {
		if ip.Is4() {
			a := ip.As4()
			pf[n] = base + 4*uintptr(binary.BigEndian.Uint32(a[:])>>(32-v4TopBits))
			n++
		}
	}
	prefetch.Lines(pf[:n])
}

// walkState is one address being walked down the tree.
type walkState struct {
	hi, lo uint64 // the address bits not yet used, most significant first
	node   uint
	depth  int // bits used so far
	stop   int // depth at which the walk ends
}

// start sets s up for ip, reporting an error for addresses the tree cannot
// hold.
func (t *searchTree) start(ip netip.Addr, s *walkState) error {
	if !ip.IsValid() {
		return errInvalidIP
	}
	if ip.Is4() {
		a := ip.As4()
		s.hi, s.lo = uint64(binary.BigEndian.Uint32(a[:]))<<32, 0
		s.node, s.depth = t.v4Start, t.v4Depth
		s.stop = s.depth + 32
		if s.depth < 96 {
			s.stop = s.depth // the IPv4 region is empty or a single record
		} else if t.v4Top != nil {
			p := s.hi >> (64 - v4TopBits)
			node, j := uint(t.v4Top[p]), v4TopBits
			if node >= t.nodeCount {
				j = int(t.v4TopShort[p])
			}
			s.node, s.depth = node, s.depth+j
			s.hi <<= j
		}
		return nil
	}
	if t.ipv4Only {
		return fmt.Errorf("error looking up '%s': you attempted to look up %w", ip, ErrIPv6InIPv4)
	}
	a := ip.As16()
	s.hi, s.lo = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	s.node, s.depth, s.stop = 0, 0, 128
	return nil
}

// startTop is start for an IPv4 address when v4Top is set.
func (t *searchTree) startTop(ip netip.Addr, s *walkState) {
	a := ip.As4()
	v := binary.BigEndian.Uint32(a[:])
	p := v >> (32 - v4TopBits)
	node, j := uint(t.v4Top[p]), v4TopBits
	if node >= t.nodeCount {
		j = int(t.v4TopShort[p])
	}
	s.hi, s.lo = uint64(v)<<(32+j), 0
	s.node, s.depth, s.stop = node, t.v4Depth+j, t.v4Depth+32
}

// stepAll advances by one level each walk of active, which must all be in
// the tree (node < nodeCount, depth < stop). It moves to the front of
// active those still in the tree after the step, with the addresses of
// their next nodes in pf, and returns their count.
func (t *searchTree) stepAll(st *[batchWalk]walkState, active []uint8, pf *[batchWalk]uintptr) int {
	k := 0
	base := uintptr(unsafe.Pointer(unsafe.SliceData(t.nodes)))
	if t.recSize == 24 {
		nodes, count := t.nodes, t.nodeCount
		for _, i := range active {
			s := &st[i&(batchWalk-1)]
			o := s.node*6 + uint(s.hi>>63)*3
			s.hi = s.hi<<1 | s.lo>>63
			s.lo <<= 1
			b := nodes[o : o+3 : o+3]
			s.node = uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2])
			s.depth++
			if s.node < count && s.depth < s.stop {
				active[k] = i
				pf[k&(batchWalk-1)] = base + uintptr(s.node*6)
				k++
			}
		}
		return k
	}
	size := t.recSize / 4
	for _, i := range active {
		s := &st[i&(batchWalk-1)]
		if t.step(s) && s.node < t.nodeCount && s.depth < s.stop {
			active[k] = i
			pf[k&(batchWalk-1)] = base + uintptr(s.node*size)
			k++
		}
	}
	return k
}

// step advances s by one level; it reports false when the walk is over.
func (t *searchTree) step(s *walkState) bool {
	if s.node >= t.nodeCount || s.depth >= s.stop {
		return false
	}
	bit := uint(s.hi >> 63)
	s.hi = s.hi<<1 | s.lo>>63
	s.lo <<= 1
	s.node = t.child(s.node, bit)
	s.depth++
	return true
}

// finish turns the end of a walk into a Match.
func (r *Reader) finish(ip netip.Addr, s *walkState) (Match, error) {
	m := Match{ip: ip, plen: uint8(s.depth), offset: notFound, ok: true}
	t := &r.tree
	switch {
	case s.node == t.nodeCount:
		return m, nil
	case s.node < t.nodeCount:
		return Match{}, errInvalidNode
	}
	off := s.node - t.nodeCount - 16
	if s.node < t.nodeCount+16 || off >= uint(len(r.data)) {
		return Match{}, errBadPointer
	}
	m.offset, m.found = off, true
	return m, nil
}

// lookup walks the tree for one address.
func (r *Reader) lookup(ip netip.Addr) (Match, error) {
	var s walkState
	if err := r.tree.start(ip, &s); err != nil {
		return Match{}, err
	}
	t := &r.tree
	if ip.Is4() && s.depth < s.stop && s.node < t.nodeCount {
		// IPv4: one 32-bit word of address bits.
		bits := uint32(s.hi >> 32)
		node, n := s.node, s.stop-s.depth
		j := 0
		for ; j < n && node < t.nodeCount; j++ {
			node = t.child(node, uint(bits>>31))
			bits <<= 1
		}
		s.node, s.depth = node, s.depth+j
	} else {
		for t.step(&s) {
		}
	}
	return r.finish(ip, &s)
}

// cachedWalk and failedWalk mark in walkState.node a walk whose record
// the cache answered and one that could not start (nodes are 32-bit).
const (
	cachedWalk = ^uint(0)
	failedWalk = ^uint(0) - 1
)

// batchWalk is how many addresses LookupFieldsBatch walks down the tree
// together: enough for many cache misses in flight, small enough for its
// state to stay on the stack.
const batchWalk = 32

// LookupFieldsBatch looks every address up like LookupFields, storing the
// values of address i in out[i*fields.Len():(i+1)*fields.Len()] and its
// match in matches[i]. out must hold len(addrs)*fields.Len() values and
// matches len(addrs) entries. The addresses walk the search tree together,
// one level per pass, prefetching the nodes of the next level, and their
// records are prefetched before any is decoded, so that the cache misses of
// different addresses overlap instead of queueing. An address that cannot
// be looked up (invalid, IPv6 in an IPv4 tree, corrupt tree or record) gets
// the zero Match; the first such error is returned after every address was
// processed. It does not allocate.
func (r *Reader) LookupFieldsBatch(addrs []netip.Addr, fields *Fields, out []Value, matches []Match) error {
	return r.LookupFieldsCached(addrs, fields, out, matches, nil)
}

// LookupFieldsCached is LookupFieldsBatch answering from cache (when not
// nil) the records it holds and adding to it those it decodes. It does not
// allocate after the cache's first use with fields.
func (r *Reader) LookupFieldsCached(addrs []netip.Addr, fields *Fields, out []Value, matches []Match, cache *RecordCache) error {
	if r.db == nil {
		return errClosed
	}
	nf := len(fields.paths)
	if len(out) < len(addrs)*nf || len(matches) < len(addrs) {
		return fmt.Errorf("mmdb: %d values and %d matches for %d addresses of %d fields", len(out), len(matches), len(addrs), nf)
	}
	clear(out[:len(addrs)*nf])
	var first error
	t := &r.tree
	var (
		st     [batchWalk]walkState
		active [batchWalk]uint8
		pf     [batchWalk]uintptr
	)
	dataBase := uintptr(unsafe.Pointer(unsafe.SliceData(r.data)))
	nodesBase, nodeSize := uintptr(unsafe.Pointer(unsafe.SliceData(t.nodes))), t.recSize/4
	if cache != nil {
		cache.bind(r, fields)
	}
	for base := 0; base < len(addrs); base += batchWalk {
		ips := addrs[base:min(base+batchWalk, len(addrs))]
		ms := matches[base : base+len(ips)]
		t.prefetchTop(ips, &pf)
		na := 0
		for i, ip := range ips {
			s := &st[i]
			if ip.Is4() && t.v4Top != nil {
				t.startTop(ip, s)
			} else if err := t.start(ip, s); err != nil {
				ms[i] = Match{}
				s.node = failedWalk
				if first == nil {
					first = err
				}
				continue
			}
			if s.node < t.nodeCount && s.depth < s.stop {
				active[na] = uint8(i)
				pf[na] = nodesBase + uintptr(s.node*nodeSize)
				na++
			}
		}
		// One tree level per pass for every address still walking; the
		// node reads of a pass are independent, and each pass starts
		// loading the nodes of the next.
		for na > 0 {
			prefetch.Lines(pf[:na])
			na = t.stepAll(&st, active[:na], &pf)
		}
		n := 0
		for i, ip := range ips {
			s := &st[i]
			if s.node == failedWalk {
				continue
			}
			m := &ms[i]
			*m = Match{ip: ip, plen: uint8(s.depth), offset: notFound, ok: true}
			if s.node == t.nodeCount {
				continue
			}
			off := s.node - t.nodeCount - 16
			if s.node < t.nodeCount+16 || off >= uint(len(r.data)) {
				*m = Match{}
				if first == nil {
					first = errBadPointer
					if s.node < t.nodeCount {
						first = errInvalidNode
					}
				}
				continue
			}
			m.offset, m.found = off, true
			if cache != nil && cache.get(off, out[(base+i)*nf:(base+i+1)*nf]) {
				s.node = cachedWalk
				continue
			}
			pf[n] = dataBase + uintptr(off)
			n++
		}
		prefetch.Lines(pf[:n])
		for i := range ips {
			m := &ms[i]
			if !m.found || st[i].node == cachedWalk {
				continue
			}
			o := out[(base+i)*nf : (base+i+1)*nf]
			if err := r.data.extract(m.offset, &fields.root, o, 0); err != nil {
				clear(o)
				*m = Match{}
				if first == nil {
					first = err
				}
				continue
			}
			if cache != nil {
				cache.put(m.offset, o)
			}
		}
	}
	runtime.KeepAlive(r)
	return first
}
