package reader

import (
	"time"

	"github.com/lutkit/lutkit/format"
)

// Range and time-bounded tables
//
// A range table (compiled with --match range) answers an integer: the
// rows whose inclusive [from, to] holds it. A time-bounded table
// (compiled with --valid-from and --valid-to) answers a key at a time:
// the rows of the key whose validity [valid_from, valid_to) holds it, in
// Unix seconds. When the table allows overlaps (--overlap narrowest or
// first), several rows can match; the Match methods return them all, in
// the table's order (narrowest first, or source order), and the Lookup
// and Get methods the first of them.
//
// Get and Lookup answer these tables too: a range table's key is the
// integer in decimal; a time-bounded table's key is looked up at the
// current time.

// openIntervals decodes the RANGE or TIMEBOUND section of a table whose
// header has its feature bit.
func (t *Table) openIntervals() error {
	h := &t.header
	if h.Incompat&format.FeatureRangeIPv4 != 0 && h.Incompat&format.FeatureRange == 0 {
		return format.Corruptf(12, "RANGE_IPV4 without RANGE")
	}
	kinds := []struct {
		bit  uint32
		kind uint32
	}{{format.FeatureRange, format.SectionRange}, {format.FeatureTimeBound, format.SectionTimeBound}}
	for _, k := range kinds {
		s, ok := format.FindSection(t.file, h, k.kind)
		if (h.Incompat&k.bit != 0) != ok {
			return format.Corruptf(int64(h.SectionsOff), "the %s section does not agree with the header's feature bits", format.SectionName(k.kind))
		}
		if !ok {
			continue
		}
		iv, err := format.DecodeIntervals(t.file[s.Off:s.Off+s.Len], int64(s.Off))
		if err != nil {
			return err
		}
		if t.iv != nil {
			// Both: a range table bounded in time (range_time.go).
			if iv.G != max(t.iv.S, 1) || iv.R != t.iv.R || iv.Policy != t.iv.Policy {
				return format.Corruptf(int64(s.Off), "TIMEBOUND section of %d groups, %d rows, policy %d in a range table of %d segments, %d rows, policy %d",
					iv.G, iv.R, iv.Policy, t.iv.S, t.iv.R, t.iv.Policy)
			}
			t.tiv, t.extra = iv, append(t.extra, s)
			continue
		}
		if k.kind == format.SectionRange && iv.G != 1 || k.kind == format.SectionTimeBound && iv.G != max(h.Rows, 1) {
			return format.Corruptf(int64(s.Off), "%s section of %d groups in a table of %d keys", format.SectionName(k.kind), iv.G, h.Rows)
		}
		t.iv, t.ivKind, t.extra = iv, k.kind, append(t.extra, s)
		t.slow = true
	}
	return nil
}

// TimeBounded reports whether the table's rows are bounded in time (a
// TIMEBOUND section, of a keyed or a range table): a lookup takes a key
// and a time (GetAt).
func (t *Table) TimeBounded() bool { return t.ivKind == format.SectionTimeBound || t.tiv != nil }

// Overlap returns a range or time-bounded table's overlap policy:
// "error" (no two rows overlap, at most one matches), "narrowest" or
// "first"; "" for an exact table.
func (t *Table) Overlap() string {
	if t.iv == nil {
		return ""
	}
	return format.OverlapNames[t.iv.Policy]
}

// record returns the row of list entry j of iv.
func (t *Table) record(iv *format.Intervals, j uint64) (format.Record, bool) {
	r, ok := format.ParseRecord(t.data, iv.Record(j), t.ncols)
	return r, ok
}

// matchGroup writes the rows of group g of iv that hold x to out, and
// returns how many it wrote.
func (t *Table) matchGroup(iv *format.Intervals, g uint64, x int64, out []View) int {
	i, ok := iv.Find(g, x)
	if !ok {
		return 0
	}
	first, end, ok := iv.List(i)
	if !ok {
		return 0
	}
	n := 0
	for j := first; j < end && n < len(out); j++ {
		if r, ok := t.record(iv, j); ok {
			out[n] = View{r}
			n++
		}
	}
	return n
}

// lookupGroup returns the first row of group g of iv that holds x.
func (t *Table) lookupGroup(iv *format.Intervals, g uint64, x int64) (format.Record, bool) {
	i, ok := iv.Find(g, x)
	if !ok {
		return format.Record{}, false
	}
	first, end, ok := iv.List(i)
	if !ok || first == end {
		return format.Record{}, false
	}
	return t.record(iv, first)
}

// LookupRange returns the row of a range table whose range holds x (the
// first of them when overlaps are allowed), aliasing the mapping; in a
// range table bounded in time, the row valid at the current time. In any
// other table it finds nothing.
func (t *Table) LookupRange(x int64) (View, bool) {
	if t.ivKind != format.SectionRange {
		return View{}, false
	}
	if t.tiv != nil {
		return t.LookupRangeAt(x, time.Now().Unix())
	}
	r, ok := t.lookupGroup(t.iv, 0, x)
	return View{r}, ok
}

// LookupRangeAt returns the row of a range table whose range holds x and,
// in a range table bounded in time, whose validity holds the time at
// (Unix seconds; other range tables ignore it), the first of them when
// overlaps are allowed. The View aliases the mapping.
func (t *Table) LookupRangeAt(x, at int64) (View, bool) {
	if t.ivKind != format.SectionRange {
		return View{}, false
	}
	if t.tiv == nil {
		r, ok := t.lookupGroup(t.iv, 0, x)
		return View{r}, ok
	}
	i, ok := t.iv.Find(0, x)
	if !ok {
		return View{}, false
	}
	r, ok := t.lookupGroup(t.tiv, i, at)
	return View{r}, ok
}

// MatchRangeAt is MatchRange at the time at: in a range table bounded in
// time, the rows whose range holds x and whose validity holds at, in the
// table's order (see Overlap).
func (t *Table) MatchRangeAt(x, at int64, out []View) int {
	if t.ivKind != format.SectionRange || len(out) == 0 {
		return 0
	}
	if t.tiv == nil {
		return t.matchGroup(t.iv, 0, x, out)
	}
	i, ok := t.iv.Find(0, x)
	if !ok {
		return 0
	}
	return t.matchGroup(t.tiv, i, at, out)
}

// GetRange is LookupRange that copies the row into row.
func (t *Table) GetRange(x int64, row *Row) bool {
	v, ok := t.LookupRange(x)
	if ok {
		row.set(v.rec)
	}
	return ok
}

// MatchRange writes up to len(out) rows of a range table whose ranges
// hold x to out, in the table's order (see Overlap), and returns how many
// it wrote; in a range table bounded in time, those valid at the current
// time. The Views alias the mapping.
func (t *Table) MatchRange(x int64, out []View) int {
	if t.ivKind != format.SectionRange {
		return 0
	}
	if t.tiv != nil {
		return t.MatchRangeAt(x, time.Now().Unix(), out)
	}
	return t.matchGroup(t.iv, 0, x, out)
}

// group returns the group of a time-bounded table's key.
func (t *Table) group(key []byte) (uint64, bool) {
	if t.fold {
		var buf [128]byte
		key = foldedKey(key, &buf)
	}
	g, _, ok := t.finder.FindPos(key)
	return g, ok
}

// LookupAt returns the row for key valid at the time at (Unix seconds):
// in a time-bounded table, the row of the key whose validity
// [valid_from, valid_to) holds at (the first of them when overlaps are
// allowed); in a range table, the row whose range holds the integer key;
// in an exact table, the key's row. The View aliases the mapping.
func (t *Table) LookupAt(key []byte, at int64) (View, bool) {
	switch t.ivKind {
	case format.SectionTimeBound:
		if t.match != format.MatchExact {
			var out [1]View
			if t.matchKindAt(key, at, out[:]) == 0 {
				return View{}, false
			}
			return out[0], true
		}
		g, ok := t.group(key)
		if !ok {
			return View{}, false
		}
		r, ok := t.lookupGroup(t.iv, g, at)
		return View{r}, ok
	case format.SectionRange:
		x, ok := t.rangeKey(key)
		if !ok {
			return View{}, false
		}
		return t.LookupRangeAt(x, at)
	}
	return t.Lookup(key)
}

// GetAt is LookupAt that copies the row into row. With a reused row it
// does not allocate.
func (t *Table) GetAt(key []byte, at int64, row *Row) bool {
	v, ok := t.LookupAt(key, at)
	if ok {
		row.set(v.rec)
	}
	return ok
}

// MatchAt writes up to len(out) rows for key valid at the time at to out,
// in the table's order (see Overlap), and returns how many it wrote: the
// several-match form of LookupAt (in a table that is neither, Match).
// The Views alias the mapping.
func (t *Table) MatchAt(key []byte, at int64, out []View) int {
	if len(out) == 0 {
		return 0
	}
	switch t.ivKind {
	case format.SectionTimeBound:
		if t.match != format.MatchExact {
			return t.matchKindAt(key, at, out)
		}
		g, ok := t.group(key)
		if !ok {
			return 0
		}
		return t.matchGroup(t.iv, g, at, out)
	case format.SectionRange:
		x, ok := t.rangeKey(key)
		if !ok {
			return 0
		}
		return t.MatchRangeAt(x, at, out)
	}
	return t.Match(key, out)
}

// lookupMatch is Lookup in a range or time-bounded table.
func (t *Table) lookupMatch(key []byte) (View, bool) {
	return t.LookupAt(key, time.Now().Unix())
}

// rangeKey reads the key of a range table: a decimal integer, or in an
// IPv4 range table an address in dotted-quad text (its number).
func (t *Table) rangeKey(key []byte) (int64, bool) {
	if t.header.Incompat&format.FeatureRangeIPv4 != 0 {
		ip, ok := format.ParseIPv4(key)
		return int64(ip), ok
	}
	return parseInt(key)
}

// parseInt reads a decimal int64 (an optional sign, then digits) without
// allocating.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true //nolint:gosec // u <= 2^63: -u is the int64 wanted
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// verifyMatch checks every entry of the RANGE or TIMEBOUND section:
// every listed record well-formed, and in a time-bounded table the key of
// every row of a group finding that group.
func (t *Table) verifyMatch() error {
	if t.iv == nil {
		return nil
	}
	off := int64(t.extra[0].Off)
	var failed error
	err := t.iv.Check(off, func(g, rec uint64) bool {
		r, ok := format.ParseRecord(t.data, rec, t.ncols)
		if !ok || !r.Valid() {
			return false
		}
		if t.ivKind == format.SectionTimeBound && t.lit != nil {
			if err := t.checkRankGroup(r, g, off); err != nil {
				failed = err
				return false
			}
		} else if t.ivKind == format.SectionTimeBound {
			if pos, _, found := t.finder.FindPos(r.Key()); !found || pos != g {
				failed = format.Corruptf(off, "a row of key %q is in group %d, its key finds group %d", r.Key(), g, pos)
				return false
			}
		}
		return true
	})
	if failed != nil {
		return failed
	}
	if err == nil && t.iv.R != uint64(t.countRecords()) {
		return format.Corruptf(off, "%s section counts %d rows, DATA holds %d", format.SectionName(t.ivKind), t.iv.R, t.countRecords())
	}
	if err == nil && t.tiv != nil {
		err = t.verifyRangeTime()
	}
	return err
}

// verifyRangeTime checks the TIMEBOUND section of a range table bounded
// in time: every entry, and every row of group g among those RANGE
// segment g lists.
func (t *Table) verifyRangeTime() error {
	off := int64(t.extra[1].Off)
	return t.tiv.Check(off, func(g, rec uint64) bool {
		r, ok := format.ParseRecord(t.data, rec, t.ncols)
		if !ok || !r.Valid() || g >= t.iv.S {
			return false
		}
		first, end, ok := t.iv.List(g)
		for j := first; ok && j < end; j++ {
			if t.iv.Record(j) == rec {
				return true
			}
		}
		return false
	})
}

// countRecords returns the number of well-formed records in DATA.
func (t *Table) countRecords() int {
	n := 0
	for off := uint64(0); off < uint64(len(t.data)); n++ {
		r, ok := format.ParseRecord(t.data, off, t.ncols)
		if !ok {
			return -1
		}
		off += uint64(r.PaddedSize())
	}
	return n
}
