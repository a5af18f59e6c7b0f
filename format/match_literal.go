package format

import (
	"encoding/binary"
	"slices"
)

// Literal indexes: the prefilter of wildcard and pattern tables
// (FORMAT.md, "Wildcard and pattern").
//
// Each row of a wildcard or pattern table has a set of anchors: literal
// strings of which every key it matches contains at least one (a glob's
// longest literal piece; the required literals of a regular expression).
// A row without one is always checked. The section numbers the rows by
// rank, the order in which a lookup tries them (a wildcard table: the
// most literal characters first, then source order; a pattern table:
// source order), and holds an Aho-Corasick automaton over the distinct
// anchors, ASCII-lowered, laid out flat: one pass over the lookup key,
// lowered the same way, finds every anchor it contains, and so the few
// rows that can match, which alone are checked, in rank order.
//
//	u64 R   rows (the table's N)
//	u64 S   automaton states, at least 1 (state 0 is the root)
//	u64 E   edges
//	u64 A   distinct anchors
//	u64 P   posting entries (rank of a row, per anchor)
//	u64 W   rows without an anchor (always checked)
//	u64 F   flags: in a WILDCARD section the glob syntax (GlobFlags,
//	        bit 0 GlobQuestion), in a PATTERN section 0
//	8 zero bytes (the header is 64 bytes)
//	each array below starts at a multiple of 64 of the section,
//	zero-padded:
//	R x u32      record offset within DATA / 8, of each rank
//	256 x u32    the root's transitions, by byte (0: stay at the root)
//	(S+1) x u32  first edge of each state; the last is E
//	S x u32      failure link: the state of the longest proper suffix
//	             (below the state: states are numbered breadth first)
//	S x u32      dictionary link: the nearest state on the failure chain
//	             that ends an anchor, or 0
//	S x u32      the anchor the state ends, plus one, or 0
//	E x u8       edge bytes, increasing within a state
//	E x u32      edge targets
//	(A+1) x u32  first posting of each anchor; the last is P
//	P x u32      ranks, increasing within an anchor
//	W x u32      ranks of the rows without an anchor, increasing

const literalHeader = 64

// LiteralRow is one row of a wildcard or pattern table as the compiler
// indexes it, in rank order: its record and its anchors (none: always
// checked).
type LiteralRow struct {
	Off     uint64 // record offset within DATA
	Anchors [][]byte
}

// LiteralIndex is a decoded WILDCARD or PATTERN section, aliasing its
// bytes.
type LiteralIndex struct {
	R, S, E, A, P, W uint64
	Flags            uint64 // F: GlobFlags in a WILDCARD section

	ranks, root, edgeStart, fail, dict, out []byte
	edgeByte, edgeTo, postStart, post       []byte
	always                                  []byte
}

// literalLayout returns the offsets of the arrays and the section size.
func literalLayout(r, s, e, a, p, w uint64) (offs [11]uint64, size uint64) {
	lens := [11]uint64{4 * r, 4 * 256, 4 * (s + 1), 4 * s, 4 * s, 4 * s, e, 4 * e, 4 * (a + 1), 4 * p, 4 * w}
	at := uint64(literalHeader)
	for i, n := range lens {
		offs[i] = at
		at = align64(at + n)
	}
	return offs, at
}

// DecodeLiteralIndex decodes a WILDCARD or PATTERN section; off is its
// offset in the file (for errors). It checks the sizes only (constant
// time); lookups bounds-check what they read, and lut verify rebuilds the
// section from the table's keys and compares it.
func DecodeLiteralIndex(b []byte, off int64, rows uint64) (*LiteralIndex, error) {
	le := binary.LittleEndian
	if len(b) < literalHeader {
		return nil, Corruptf(off, "literal index section too short")
	}
	x := &LiteralIndex{R: le.Uint64(b), S: le.Uint64(b[8:]), E: le.Uint64(b[16:]), A: le.Uint64(b[24:]), P: le.Uint64(b[32:]), W: le.Uint64(b[40:])}
	for _, n := range []uint64{x.R, x.S, x.E, x.A, x.P, x.W} {
		if n > 1<<32-2 {
			return nil, Corruptf(off, "literal index counts out of range")
		}
	}
	if x.R != rows || x.S == 0 || x.W > x.R {
		return nil, Corruptf(off, "literal index of %d rows and %d states in a table of %d rows", x.R, x.S, rows)
	}
	if x.Flags = le.Uint64(b[48:]); x.Flags&^uint64(GlobQuestion) != 0 {
		return nil, Corruptf(off+48, "literal index flags %#x unknown", x.Flags)
	}
	if le.Uint64(b[56:]) != 0 {
		return nil, Corruptf(off+56, "literal index reserved bytes not zero")
	}
	offs, size := literalLayout(x.R, x.S, x.E, x.A, x.P, x.W)
	if size != uint64(len(b)) {
		return nil, Corruptf(off, "literal index section of %d bytes, its counts need %d", len(b), size)
	}
	arr := func(i int, n uint64) []byte { return b[offs[i] : offs[i]+n] }
	x.ranks, x.root = arr(0, 4*x.R), arr(1, 4*256)
	x.edgeStart, x.fail, x.dict, x.out = arr(2, 4*(x.S+1)), arr(3, 4*x.S), arr(4, 4*x.S), arr(5, 4*x.S)
	x.edgeByte, x.edgeTo = arr(6, x.E), arr(7, 4*x.E)
	x.postStart, x.post, x.always = arr(8, 4*(x.A+1)), arr(9, 4*x.P), arr(10, 4*x.W)
	return x, nil
}

func u32at(b []byte, i uint64) uint64 { return uint64(binary.LittleEndian.Uint32(b[4*i:])) }

// lower is ASCII lower-casing, the automaton's alphabet.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// lowered returns a ASCII-lowered.
func lowered(a []byte) string {
	l := make([]byte, len(a))
	for i, c := range a {
		l[i] = lower(c)
	}
	return string(l)
}

// next returns the state after state s reads byte c.
func (x *LiteralIndex) next(s uint64, c byte) uint64 {
	for s != 0 {
		first, end := u32at(x.edgeStart, s), u32at(x.edgeStart, s+1)
		if first > end || end > x.E {
			return 0
		}
		// Binary search of the state's edges, sorted by byte.
		lo, hi := first, end
		for lo < hi {
			m := (lo + hi) / 2
			if x.edgeByte[m] < c {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < end && x.edgeByte[lo] == c {
			if t := u32at(x.edgeTo, lo); t < x.S {
				return t
			}
			return 0
		}
		f := u32at(x.fail, s)
		if f >= s {
			return 0 // damaged: a failure link goes down the numbering
		}
		s = f
	}
	if t := u32at(x.root, uint64(c)); t < x.S {
		return t
	}
	return 0
}

// Anchors appends to dst the anchors (their numbers) that key contains,
// ASCII case ignored, once each per place they end; the caller sorts and
// compacts them. It does not allocate when dst has room.
func (x *LiteralIndex) Anchors(dst []uint32, key []byte) []uint32 {
	s := uint64(0)
	for _, c := range key {
		s = x.next(s, lower(c))
		for o := s; o != 0; {
			if a := u32at(x.out, o); a != 0 && a <= x.A {
				dst = append(dst, uint32(a-1))
			}
			d := u32at(x.dict, o)
			if d >= o {
				break
			}
			o = d
		}
	}
	return dst
}

// Postings appends the ranks of the rows of anchor a to dst.
func (x *LiteralIndex) Postings(dst []uint32, a uint32) []uint32 {
	if uint64(a) >= x.A {
		return dst
	}
	first, end := u32at(x.postStart, uint64(a)), u32at(x.postStart, uint64(a)+1)
	if first > end || end > x.P {
		return dst
	}
	for i := first; i < end; i++ {
		dst = append(dst, binary.LittleEndian.Uint32(x.post[4*i:]))
	}
	return dst
}

// Always appends the ranks of the rows without an anchor to dst.
func (x *LiteralIndex) Always(dst []uint32) []uint32 {
	for i := uint64(0); i < x.W; i++ {
		dst = append(dst, binary.LittleEndian.Uint32(x.always[4*i:]))
	}
	return dst
}

// Candidates sets dst to the ranks of the rows that can match key, in
// rank order, once each: the rows of every anchor key contains, and the
// rows without an anchor. It does not allocate when dst and scratch have
// room; it returns both, grown.
func (x *LiteralIndex) Candidates(dst, scratch []uint32, key []byte) ([]uint32, []uint32) {
	scratch = x.Anchors(scratch[:0], key)
	slices.Sort(scratch)
	scratch = slices.Compact(scratch)
	dst = dst[:0]
	for _, a := range scratch {
		dst = x.Postings(dst, a)
	}
	dst = x.Always(dst)
	slices.Sort(dst)
	return slices.Compact(dst), scratch
}

// Record returns the DATA offset of the row of rank r (false when out of
// range).
func (x *LiteralIndex) Record(r uint32) (uint64, bool) {
	if uint64(r) >= x.R {
		return 0, false
	}
	return u32at(x.ranks, uint64(r)) * RecordAlign, true
}

// AppendLiteralIndex appends the section of rows, given in rank order,
// with flags 0 (a PATTERN section).
func AppendLiteralIndex(dst []byte, rows []LiteralRow) []byte {
	return AppendLiteralIndexFlags(dst, 0, rows)
}

// AppendLiteralIndexFlags appends the section of rows, given in rank
// order, with the flags word flags. Anchors are ASCII-lowered; an empty
// anchor makes its row always checked (every key contains it).
func AppendLiteralIndexFlags(dst []byte, flags uint64, rows []LiteralRow) []byte {
	// The distinct anchors, sorted, and the ranks of each.
	ids := map[string]int{}
	var always []uint32
	checked := make([]bool, len(rows)) // always checked
	for rank, r := range rows {
		has := len(r.Anchors) > 0
		for _, a := range r.Anchors {
			has = has && len(a) > 0
		}
		if !has {
			always = append(always, uint32(rank))
			checked[rank] = true
			continue
		}
		for _, a := range r.Anchors {
			ids[lowered(a)] = 0
		}
	}
	anchors := make([]string, 0, len(ids))
	for a := range ids {
		anchors = append(anchors, a)
	}
	slices.Sort(anchors)
	for i, a := range anchors {
		ids[a] = i
	}
	postings := make([][]uint32, len(anchors))
	for rank, r := range rows {
		if checked[rank] {
			continue
		}
		var mine []int
		for _, a := range r.Anchors {
			mine = append(mine, ids[lowered(a)])
		}
		slices.Sort(mine)
		for _, id := range slices.Compact(mine) {
			postings[id] = append(postings[id], uint32(rank))
		}
	}
	tr := buildTrie(anchors)
	s, e := uint64(len(tr.states)), uint64(len(tr.edgeByte))
	var p uint64
	for _, ps := range postings {
		p += uint64(len(ps))
	}
	r, a, w := uint64(len(rows)), uint64(len(anchors)), uint64(len(always))
	offs, size := literalLayout(r, s, e, a, p, w)
	base := len(dst)
	dst = slices.Grow(dst, int(size))[:base+int(size)]
	b := dst[base:]
	clear(b)
	le := binary.LittleEndian
	for i, v := range []uint64{r, s, e, a, p, w, flags} {
		le.PutUint64(b[8*i:], v)
	}
	put := func(arr int, i uint64, v uint32) { le.PutUint32(b[offs[arr]+4*i:], v) }
	for i, row := range rows {
		put(0, uint64(i), uint32(row.Off/RecordAlign))
	}
	for c, t := range tr.root {
		put(1, uint64(c), t)
	}
	for i, st := range tr.states {
		put(2, uint64(i), st.edgeStart)
		put(3, uint64(i), st.fail)
		put(4, uint64(i), st.dict)
		put(5, uint64(i), st.out)
	}
	put(2, s, uint32(e))
	copy(b[offs[6]:], tr.edgeByte)
	for i, t := range tr.edgeTo {
		put(7, uint64(i), t)
	}
	n := uint32(0)
	for i, ps := range postings {
		put(8, uint64(i), n)
		for _, rank := range ps {
			put(9, uint64(n), rank)
			n++
		}
	}
	put(8, a, n)
	for i, rank := range always {
		put(10, uint64(i), rank)
	}
	return dst
}

// trie is the automaton as AppendLiteralIndex builds it: states numbered
// breadth first, so that every failure and dictionary link goes to a
// lower number.
type trie struct {
	states   []trieState
	edgeByte []byte
	edgeTo   []uint32
	root     [256]uint32
}

type trieState struct {
	edgeStart, fail, dict, out uint32
}

// buildTrie builds the automaton of sorted, distinct, non-empty anchors.
func buildTrie(anchors []string) *trie {
	// Insertion in sorted order appends each node's children in byte
	// order, and the child a key continues through is its node's last.
	type node struct {
		kids  []uint32
		bytes []byte
		out   uint32
	}
	nodes := []node{{}}
	for id, a := range anchors {
		n := uint32(0)
		for i := 0; i < len(a); i++ {
			c := a[i]
			k := nodes[n].kids
			if len(k) > 0 && nodes[n].bytes[len(k)-1] == c {
				n = k[len(k)-1]
				continue
			}
			nodes = append(nodes, node{})
			child := uint32(len(nodes) - 1)
			nodes[n].kids = append(nodes[n].kids, child)
			nodes[n].bytes = append(nodes[n].bytes, c)
			n = child
		}
		nodes[n].out = uint32(id) + 1
	}
	// Breadth-first numbering.
	order := []uint32{0}
	num := make([]uint32, len(nodes))
	for i := 0; i < len(order); i++ {
		for _, k := range nodes[order[i]].kids {
			num[k] = uint32(len(order))
			order = append(order, k)
		}
	}
	t := &trie{states: make([]trieState, len(order))}
	for i, old := range order {
		nd := &nodes[old]
		t.states[i] = trieState{edgeStart: uint32(len(t.edgeByte)), out: nd.out}
		for j, k := range nd.kids {
			t.edgeByte = append(t.edgeByte, nd.bytes[j])
			t.edgeTo = append(t.edgeTo, num[k])
		}
	}
	for j, k := range nodes[0].kids {
		t.root[nodes[0].bytes[j]] = num[k]
	}
	x := &LiteralIndex{S: uint64(len(order)), E: uint64(len(t.edgeByte))}
	le := binary.LittleEndian
	x.edgeByte = t.edgeByte
	x.edgeTo = make([]byte, 4*len(t.edgeTo))
	for i, v := range t.edgeTo {
		le.PutUint32(x.edgeTo[4*i:], v)
	}
	x.edgeStart = make([]byte, 4*(len(order)+1))
	for i, st := range t.states {
		le.PutUint32(x.edgeStart[4*i:], st.edgeStart)
	}
	le.PutUint32(x.edgeStart[4*len(order):], uint32(len(t.edgeByte)))
	x.fail = make([]byte, 4*len(order))
	x.root = make([]byte, 4*256)
	for c, v := range t.root {
		le.PutUint32(x.root[4*c:], v)
	}
	// Failure and dictionary links, breadth first: a state's links are
	// set before its children's.
	for s := range t.states {
		first, end := t.states[s].edgeStart, uint32(len(t.edgeByte))
		if s+1 < len(t.states) {
			end = t.states[s+1].edgeStart
		}
		for e := first; e < end; e++ {
			child, c := t.edgeTo[e], t.edgeByte[e]
			f := uint32(0)
			if s != 0 {
				f = uint32(x.next(uint64(t.states[s].fail), c))
			}
			t.states[child].fail = f
			le.PutUint32(x.fail[4*child:], f)
			if t.states[f].out != 0 {
				t.states[child].dict = f
			} else {
				t.states[child].dict = t.states[f].dict
			}
		}
	}
	return t
}
