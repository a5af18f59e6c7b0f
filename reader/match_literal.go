package reader

import (
	"bytes"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/lutkit/lutkit/format"
)

// Wildcard and pattern tables
//
// Both kinds keep a literal index (format.LiteralIndex): its automaton
// finds, in one pass over the lookup key, the rows whose anchors the key
// contains; those and the rows without an anchor are checked in rank
// order (a wildcard table: the most literal characters first; a pattern
// table: source order), and the first that matches is the best match. A
// pattern table compiles each pattern the first time a lookup checks it,
// and keeps it (see matching.md for the heap this takes).

// literalTable is the lookup state of a wildcard or pattern table.
type literalTable struct {
	x    *format.LiteralIndex
	kind uint32         // SectionWildcard or SectionPattern
	sec  format.Section // its entry
	res  []atomic.Pointer[regexp.Regexp]
}

// never is the pattern of a row whose stored pattern does not compile
// (only a damaged file holds one): it matches nothing.
var never = regexp.MustCompile(`[^\x00-\x{10FFFF}]`)

// literalScratch is a lookup's working memory, pooled so that a lookup
// does not allocate once the pool holds one of the size it needs.
type literalScratch struct {
	cand, anchors []uint32
	key           []byte
	// re is the key a pattern's regexp reads: a copy, because regexp
	// keeps its input in its machine, which would make every caller's
	// key escape to the heap.
	re []byte
}

var literalPool = sync.Pool{New: func() any { return new(literalScratch) }}

// openLiteral decodes the WILDCARD or PATTERN section of a table whose
// header has its feature bit.
func (t *Table) openLiteral() error {
	h := &t.header
	for _, k := range []struct {
		bit, kind uint32
		match     format.MatchKind
	}{{format.FeatureWildcard, format.SectionWildcard, format.MatchWildcard}, {format.FeaturePattern, format.SectionPattern, format.MatchPattern}} {
		s, ok := format.FindSection(t.file, h, k.kind)
		if (h.Incompat&k.bit != 0) != ok {
			return format.Corruptf(int64(h.SectionsOff), "the %s section does not agree with the header's feature bits", format.SectionName(k.kind))
		}
		if !ok {
			continue
		}
		if t.match != k.match || t.lit != nil || h.Incompat&format.FeatureRange != 0 {
			return format.Corruptf(int64(s.Off), "a table of two match kinds")
		}
		x, err := format.DecodeLiteralIndex(t.file[s.Off:s.Off+s.Len], int64(s.Off), h.Rows)
		if err != nil {
			return err
		}
		if k.kind == format.SectionPattern && x.Flags != 0 {
			return format.Corruptf(int64(s.Off)+48, "a PATTERN section with flags %#x", x.Flags)
		}
		t.lit = &literalTable{x: x, kind: k.kind, sec: s}
		if k.kind == format.SectionPattern {
			t.lit.res = make([]atomic.Pointer[regexp.Regexp], x.R)
		}
		t.extra = append(t.extra, s)
		t.slow = true
	}
	return nil
}

// pattern returns the compiled pattern of the row of rank r, whose
// stored key is src, compiling it at its first use.
func (l *literalTable) pattern(r uint32, src []byte) *regexp.Regexp {
	p := &l.res[r]
	if re := p.Load(); re != nil {
		return re
	}
	re, err := format.CompilePattern(src)
	if err != nil {
		re = never
	}
	if !p.CompareAndSwap(nil, re) {
		return p.Load()
	}
	return re
}

// matchLiteral is Match in a wildcard or pattern table: the rows that
// match key, in rank order, up to len(out). In a table bounded in time
// each matching key gives its rows valid at the time at, its TIMEBOUND
// group being its rank (suffix_time.go).
func (t *Table) matchLiteral(key []byte, at int64, out []View) int {
	l := t.lit
	sc := literalPool.Get().(*literalScratch)
	q := key
	if t.fold {
		sc.key = format.FoldKey(sc.key[:0], key)
		q = sc.key
	}
	sc.cand, sc.anchors = l.x.Candidates(sc.cand, sc.anchors, q)
	var rq []byte
	if l.kind != format.SectionWildcard && len(sc.cand) > 0 {
		sc.re = append(sc.re[:0], q...)
		rq = sc.re
	}
	n := 0
	for _, rank := range sc.cand {
		off, ok := l.x.Record(rank)
		if !ok {
			continue
		}
		r, ok := format.ParseRecord(t.data, off, t.ncols)
		if !ok {
			continue
		}
		var hit bool
		if l.kind == format.SectionWildcard {
			hit = format.MatchGlob(r.Key(), q, format.GlobFlags(l.x.Flags))
		} else {
			hit = l.pattern(rank, r.Key()).Match(rq)
		}
		if hit && t.iv != nil {
			n += t.matchGroup(t.iv, uint64(rank), at, out[n:])
		} else if hit {
			out[n] = View{r}
			n++
		}
		if n == len(out) {
			break
		}
	}
	literalPool.Put(sc)
	return n
}

// findLiteral returns the best match of key in a wildcard or pattern
// table.
func (t *Table) findLiteral(key []byte) (format.Record, bool) {
	var out [1]View
	if t.matchLiteral(key, 0, out[:]) == 0 {
		return format.Record{}, false
	}
	return out[0].rec, true
}

// verifyLiteral rebuilds the literal index from the live rows' keys and
// compares it with the section: the same ranks, anchors, automaton and
// postings, byte for byte.
func (t *Table) verifyLiteral() error {
	if t.lit == nil {
		return nil
	}
	var (
		keys [][]byte
		offs []uint64
	)
	for off := uint64(0); off < uint64(len(t.data)); {
		r, ok := format.ParseRecord(t.data, off, t.ncols)
		if !ok {
			return format.Corruptf(int64(t.sections[format.SectionData].Off+off), "malformed record")
		}
		if live, found := t.find(r.Key()); found && live.Bytes() != nil && &live.Bytes()[0] == &r.Bytes()[0] {
			keys, offs = append(keys, r.Key()), append(offs, off)
		}
		off += uint64(r.PaddedSize())
	}
	s := t.lit.sec
	var rows []format.LiteralRow
	if t.lit.kind == format.SectionWildcard {
		for _, k := range keys {
			if err := format.CheckWildcard(k); err != nil {
				return format.Corruptf(int64(s.Off), "wildcard key %q: %v", k, err)
			}
		}
		rows = format.WildcardRows(keys, offs, format.GlobFlags(t.lit.x.Flags))
	} else {
		var (
			i   int
			err error
		)
		if rows, i, err = format.PatternRows(keys, offs); err != nil {
			return format.Corruptf(int64(s.Off), "pattern %q: %v", keys[i], err)
		}
	}
	if want := format.AppendLiteralIndexFlags(nil, t.lit.x.Flags, rows); !bytes.Equal(want, t.file[s.Off:s.Off+s.Len]) {
		return format.Corruptf(int64(s.Off), "%s section is not the index of the table's keys", format.SectionName(s.Kind))
	}
	return nil
}
