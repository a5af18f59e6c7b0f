package format

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Range and time-bounded tables (FORMAT.md, "Match kinds").
//
// A RANGE section (kind SectionRange) answers "which rows cover the
// integer x": the rows' inclusive [from, to] ranges, flattened at compile
// time into disjoint segments sorted by their low bound, each segment
// listing the rows that cover it in precedence order. A TIMEBOUND section
// (kind SectionTimeBound) holds the same structure once per key (a
// group, numbered by the key's MPHF position), over the rows' validity
// [valid_from, valid_to), stored as the inclusive [from, to-1].
//
// Both sections are an Intervals encoding:
//
//	u64 G        group count (1 for RANGE; the row count N for TIMEBOUND)
//	u64 S        segment count
//	u64 L        list entry count
//	u64 R        record count: rows in DATA
//	u32 policy   0 error, 1 narrowest, 2 first (OverlapError...)
//	u32 0        reserved
//	24 zero bytes (the header is 64 bytes)
//	each array below starts at a multiple of 64 within the section,
//	zero-padded:
//	(G+1) x u32  first segment of each group; the last is S
//	S x i64      low bound of each segment (sorted within a group)
//	S x i64      high bound, inclusive (lo <= hi < next lo)
//	(S+1) x u32  first list entry of each segment; the last is L
//	L x u32      record offset within DATA / 8
//	ceil(S/8) x i64   lo[8i]: the index of a one-group section's lookup
const (
	SectionRange     = 9
	SectionTimeBound = 10
)

// Incompatible feature bits of range and time-bounded tables (version
// 1.2). A table with either bit keeps every source row in DATA; its
// header's row count N counts the distinct keys (the MPHF's), and the
// section's R the rows.
const (
	// FeatureRange: the table has a RANGE section; a lookup takes an
	// integer.
	FeatureRange uint32 = 1 << 5
	// FeatureTimeBound: the table has a TIMEBOUND section; a lookup takes
	// a key and a time.
	FeatureTimeBound uint32 = 1 << 6
)

// A suffix, wildcard or pattern table with FeatureTimeBound has a
// TIMEBOUND section of one group per distinct key: its MPHF position in a
// suffix table, its rank in the literal index of a wildcard or pattern
// table (FORMAT.md, "Suffix, wildcard and pattern tables bounded in
// time").

// A table with both bits is a range table whose rows are bounded in time
// (an IP-and-time lease table): its RANGE section lists every row covering
// each segment of integers whatever its validity, and its TIMEBOUND
// section has one group per RANGE segment, over the validities of the
// rows that segment lists. A lookup of x at t finds x's segment i in
// RANGE, then t in group i of TIMEBOUND.

// Overlap policies: what the compiler does with rows whose ranges (or,
// for one key, validity) overlap.
const (
	OverlapError     = 0 // refuse the table
	OverlapNarrowest = 1 // the narrowest row first, then source order
	OverlapFirst     = 2 // source order
)

// OverlapNames are the policies' names, by value.
var OverlapNames = [...]string{"error", "narrowest", "first"}

// ParseOverlap returns the policy of a name ("" is error).
func ParseOverlap(s string) (uint32, error) {
	if s == "" {
		return OverlapError, nil
	}
	for i, n := range OverlapNames {
		if n == s {
			return uint32(i), nil
		}
	}
	return 0, fmt.Errorf("unknown overlap policy %q (want error, narrowest or first)", s)
}

const intervalsHeader = 64

// Intervals is a decoded RANGE or TIMEBOUND section, aliasing its bytes.
type Intervals struct {
	G, S, L, R uint64
	Policy     uint32
	groups     []byte
	lo, hi     []byte
	lists      []byte
	list       []byte
	index      []byte
}

func align64(n uint64) uint64 { return (n + 63) &^ 63 }

// intervalsLayout returns the offsets of the arrays and the section size.
func intervalsLayout(g, s, l uint64) (offs [6]uint64, size uint64) {
	at := uint64(intervalsHeader)
	lens := [6]uint64{4 * (g + 1), 8 * s, 8 * s, 4 * (s + 1), 4 * l, 8 * ((s + 7) / 8)}
	for i, n := range lens {
		offs[i] = at
		at = align64(at + n)
	}
	return offs, at
}

// DecodeIntervals decodes a RANGE or TIMEBOUND section; off is its offset
// in the file (for errors). It checks the sizes only (constant time);
// lookups bounds-check what they read and Check checks every entry.
func DecodeIntervals(b []byte, off int64) (*Intervals, error) {
	le := binary.LittleEndian
	if len(b) < intervalsHeader {
		return nil, Corruptf(off, "interval section too short")
	}
	iv := &Intervals{G: le.Uint64(b), S: le.Uint64(b[8:]), L: le.Uint64(b[16:]), R: le.Uint64(b[24:]), Policy: le.Uint32(b[32:])}
	if iv.G == 0 || iv.G > 1<<32 || iv.S > 1<<32 || iv.L > 1<<32 || iv.R > 1<<32 {
		return nil, Corruptf(off, "interval section counts (%d groups, %d segments, %d list entries) out of range", iv.G, iv.S, iv.L)
	}
	if iv.Policy > OverlapFirst {
		return nil, Corruptf(off+32, "unknown overlap policy %d", iv.Policy)
	}
	offs, size := intervalsLayout(iv.G, iv.S, iv.L)
	if size != uint64(len(b)) {
		return nil, Corruptf(off, "interval section of %d bytes, its counts need %d", len(b), size)
	}
	iv.groups = b[offs[0] : offs[0]+4*(iv.G+1)]
	iv.lo = b[offs[1] : offs[1]+8*iv.S]
	iv.hi = b[offs[2] : offs[2]+8*iv.S]
	iv.lists = b[offs[3] : offs[3]+4*(iv.S+1)]
	iv.list = b[offs[4] : offs[4]+4*iv.L]
	iv.index = b[offs[5] : offs[5]+8*((iv.S+7)/8)]
	return iv, nil
}

func (iv *Intervals) loAt(i uint64) int64 {
	return int64(binary.LittleEndian.Uint64(iv.lo[8*i:]))
}

// Group returns the segments [first, end) of group g (false when out of
// range or damaged).
func (iv *Intervals) Group(g uint64) (first, end uint64, ok bool) {
	if g >= iv.G {
		return 0, 0, false
	}
	le := binary.LittleEndian
	first, end = uint64(le.Uint32(iv.groups[4*g:])), uint64(le.Uint32(iv.groups[4*g+4:]))
	return first, end, first <= end && end <= iv.S
}

// Find returns the segment of group g that holds x.
func (iv *Intervals) Find(g uint64, x int64) (uint64, bool) {
	first, end, ok := iv.Group(g)
	if !ok || first == end {
		return 0, false
	}
	var i uint64
	if iv.G == 1 {
		i = iv.findIndexed(x)
	} else {
		i = iv.search(first, end, x)
	}
	if i == first && iv.loAt(first) > x {
		return 0, false
	}
	if int64(binary.LittleEndian.Uint64(iv.hi[8*i:])) < x {
		return 0, false
	}
	return i, true
}

// search returns the last segment in [first, end) whose low bound is at
// most x, or first.
func (iv *Intervals) search(first, end uint64, x int64) uint64 {
	lo, n := first, end-first
	for n > 1 {
		half := n / 2
		if iv.loAt(lo+half) <= x {
			lo += half
		}
		n -= half
	}
	return lo
}

// findIndexed is search over the whole of a one-group section: a binary
// search of the index (every 8th low bound, its upper levels in cache),
// then a scan of one 64-byte line of low bounds.
func (iv *Intervals) findIndexed(x int64) uint64 {
	le := binary.LittleEndian
	nb := uint64(len(iv.index) / 8)
	b, n := uint64(0), nb
	for n > 1 {
		half := n / 2
		if int64(le.Uint64(iv.index[8*(b+half):])) <= x {
			b += half
		}
		n -= half
	}
	i := 8 * b
	end := min(i+8, iv.S)
	for j := i + 1; j < end; j++ {
		if iv.loAt(j) > x {
			break
		}
		i = j
	}
	return i
}

// Bounds returns segment i's bounds.
func (iv *Intervals) Bounds(i uint64) (lo, hi int64) {
	le := binary.LittleEndian
	return int64(le.Uint64(iv.lo[8*i:])), int64(le.Uint64(iv.hi[8*i:]))
}

// List returns the list entries [first, end) of segment i, which must be
// below S (false when damaged).
func (iv *Intervals) List(i uint64) (first, end uint64, ok bool) {
	le := binary.LittleEndian
	first, end = uint64(le.Uint32(iv.lists[4*i:])), uint64(le.Uint32(iv.lists[4*i+4:]))
	return first, end, first <= end && end <= iv.L
}

// Record returns the DATA offset of list entry j, which must be below L.
func (iv *Intervals) Record(j uint64) uint64 {
	return uint64(binary.LittleEndian.Uint32(iv.list[4*j:])) * RecordAlign
}

// Check checks every entry: groups and lists non-decreasing and in range,
// segments sorted, disjoint and lo <= hi within a group, every segment
// listing at least one row, the index agreeing with the low bounds. rec
// reports whether a DATA offset starts a well-formed record of group g.
func (iv *Intervals) Check(off int64, rec func(g, off uint64) bool) error {
	le := binary.LittleEndian
	if uint64(le.Uint32(iv.groups[4*iv.G:])) != iv.S || uint64(le.Uint32(iv.lists[4*iv.S:])) != iv.L || le.Uint32(iv.groups) != 0 || le.Uint32(iv.lists) != 0 {
		return Corruptf(off, "interval section: the group or list starts do not end at the counts")
	}
	for g := uint64(0); g < iv.G; g++ {
		first, end, ok := iv.Group(g)
		if !ok {
			return Corruptf(off, "interval group %d out of order", g)
		}
		for i := first; i < end; i++ {
			lo, hi := iv.Bounds(i)
			if lo > hi {
				return Corruptf(off, "segment %d: low bound %d above high bound %d", i, lo, hi)
			}
			if i > first {
				if _, prev := iv.Bounds(i - 1); prev >= lo {
					return Corruptf(off, "segment %d overlaps or precedes segment %d", i, i-1)
				}
			}
			lf, le, ok := iv.List(i)
			if !ok || lf == le {
				return Corruptf(off, "segment %d has a bad list of rows", i)
			}
			for j := lf; j < le; j++ {
				if !rec(g, iv.Record(j)) {
					return Corruptf(off, "segment %d lists a malformed record at DATA offset %d", i, iv.Record(j))
				}
			}
		}
	}
	for b := uint64(0); b < uint64(len(iv.index)/8); b++ {
		if int64(le.Uint64(iv.index[8*b:])) != iv.loAt(8*b) {
			return Corruptf(off, "interval index entry %d does not match segment %d", b, 8*b)
		}
	}
	return nil
}

// Interval is one row of a range or time-bounded table, as the compiler
// builds the section from it: the group (0, or the key's MPHF position),
// its inclusive bounds, its record and its source line.
type Interval struct {
	Group  uint64
	Lo, Hi int64
	Off    uint64 // record offset within DATA
	Line   int64
	// Rank orders the rows that cover a segment in AppendRankedIntervals
	// (lower first, then Line); AppendIntervals ignores it.
	Rank uint64
}

// OverlapErr describes two rows whose intervals overlap under
// OverlapError.
type OverlapErr struct{ A, B Interval }

func (e *OverlapErr) Error() string {
	return fmt.Sprintf("rows at lines %d and %d overlap ([%d, %d] and [%d, %d])", e.A.Line, e.B.Line, e.A.Lo, e.A.Hi, e.B.Lo, e.B.Hi)
}

// AppendIntervals appends the section for rows (in any order) of groups
// groups and records records: it sorts them, refuses overlaps under
// OverlapError (an *OverlapErr, the earlier line first), and otherwise
// splits overlapping rows into disjoint segments that list every row
// covering them, in the policy's order.
func AppendIntervals(dst []byte, rows []Interval, groups, records uint64, policy uint32) ([]byte, error) {
	less := func(a, b Interval) int {
		if policy == OverlapNarrowest {
			if c := cmp.Compare(uint64(a.Hi-a.Lo), uint64(b.Hi-b.Lo)); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Line, b.Line)
	}
	return appendIntervals(dst, rows, groups, records, policy, policy == OverlapError, less)
}

// AppendRankedIntervals is AppendIntervals that lists the rows covering a
// segment by their Rank (then Line) whatever the policy, which it only
// records, and refuses overlaps only when refuse is set: the sections of
// a range table bounded in time, whose rows may overlap in one dimension
// and not in both, and are ranked by their ranges in both.
func AppendRankedIntervals(dst []byte, rows []Interval, groups, records uint64, policy uint32, refuse bool) ([]byte, error) {
	less := func(a, b Interval) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Line, b.Line)) }
	return appendIntervals(dst, rows, groups, records, policy, refuse, less)
}

func appendIntervals(dst []byte, rows []Interval, groups, records uint64, policy uint32, refuse bool, less func(a, b Interval) int) ([]byte, error) {
	slices.SortFunc(rows, func(a, b Interval) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Lo, b.Lo), cmp.Compare(a.Line, b.Line))
	})
	var (
		groupStart = make([]uint32, 0, groups+1)
		los, his   []int64
		listStart  []uint32
		list       []uint32
	)
	r := 0
	for g := uint64(0); g < groups; g++ {
		groupStart = append(groupStart, uint32(len(los)))
		end := r
		for end < len(rows) && rows[end].Group == g {
			end++
		}
		grp := rows[r:end]
		r = end
		if refuse {
			for i, row := range grp {
				if i > 0 && grp[i-1].Hi >= row.Lo {
					a, b := grp[i-1], row
					if a.Line > b.Line {
						a, b = b, a
					}
					return nil, &OverlapErr{A: a, B: b}
				}
				los, his = append(los, row.Lo), append(his, row.Hi)
				listStart = append(listStart, uint32(len(list)))
				list = append(list, uint32(row.Off/RecordAlign))
			}
			continue
		}
		los, his, listStart, list = sweep(grp, less, los, his, listStart, list)
	}
	if r != len(rows) {
		return nil, fmt.Errorf("internal error: an interval of group %d beyond the %d groups", rows[r].Group, groups)
	}
	groupStart = append(groupStart, uint32(len(los)))
	listStart = append(listStart, uint32(len(list)))
	s, l := uint64(len(los)), uint64(len(list))
	offs, size := intervalsLayout(groups, s, l)
	base := len(dst)
	dst = slices.Grow(dst, int(size))[:base+int(size)]
	b := dst[base:]
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b, groups)
	le.PutUint64(b[8:], s)
	le.PutUint64(b[16:], l)
	le.PutUint64(b[24:], records)
	le.PutUint32(b[32:], policy)
	for i, v := range groupStart {
		le.PutUint32(b[offs[0]+4*uint64(i):], v)
	}
	for i := range los {
		le.PutUint64(b[offs[1]+8*uint64(i):], uint64(los[i]))
		le.PutUint64(b[offs[2]+8*uint64(i):], uint64(his[i]))
		if i%8 == 0 {
			le.PutUint64(b[offs[5]+uint64(i):], uint64(los[i]))
		}
	}
	for i, v := range listStart {
		le.PutUint32(b[offs[3]+4*uint64(i):], v)
	}
	for i, v := range list {
		le.PutUint32(b[offs[4]+4*uint64(i):], v)
	}
	return dst, nil
}

// sweep splits the overlapping rows of one group (sorted by low bound)
// into disjoint segments, each listing the rows that cover it in the
// order of less; neighbouring segments with the same list are merged.
func sweep(grp []Interval, less func(a, b Interval) int, los, his []int64, listStart, list []uint32) ([]int64, []int64, []uint32, []uint32) {
	// The segment boundaries: every low bound, and every high bound + 1.
	var bounds []int64
	for _, row := range grp {
		bounds = append(bounds, row.Lo)
		if row.Hi < math.MaxInt64 {
			bounds = append(bounds, row.Hi+1)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var active, sorted []Interval
	next := 0
	first := len(los) // the group's first segment, never merged across
	for bi, lo := range bounds {
		hi := int64(math.MaxInt64)
		if bi+1 < len(bounds) {
			hi = bounds[bi+1] - 1
		}
		kept := active[:0]
		for _, a := range active {
			if a.Hi >= lo {
				kept = append(kept, a)
			}
		}
		active = kept
		for next < len(grp) && grp[next].Lo <= lo {
			active = append(active, grp[next])
			next++
		}
		if len(active) == 0 {
			continue
		}
		sorted = append(sorted[:0], active...)
		slices.SortFunc(sorted, less)
		n := len(los)
		if n > first && his[n-1] == lo-1 && sameList(list[listStart[n-1]:], sorted) {
			his[n-1] = hi
			continue
		}
		los, his = append(los, lo), append(his, hi)
		listStart = append(listStart, uint32(len(list)))
		for _, a := range sorted {
			list = append(list, uint32(a.Off/RecordAlign))
		}
	}
	return los, his, listStart, list
}

func sameList(l []uint32, rows []Interval) bool {
	if len(l) != len(rows) {
		return false
	}
	for i, r := range rows {
		if l[i] != uint32(r.Off/RecordAlign) {
			return false
		}
	}
	return true
}

// FindSection returns the entry of a section kind that DecodeSections
// skips (a kind above HighestSection), from a section table it checked.
func FindSection(file []byte, h *Header, kind uint32) (Section, bool) {
	le := binary.LittleEndian
	for i := uint64(0); i < uint64(h.SectionCount); i++ {
		e := file[h.SectionsOff+i*SectionEntrySize:]
		if le.Uint32(e) == kind {
			return Section{Kind: kind, Flags: le.Uint32(e[4:]), Off: le.Uint64(e[8:]), Len: le.Uint64(e[16:]), Checksum: le.Uint64(e[24:])}, true
		}
	}
	return Section{}, false
}
