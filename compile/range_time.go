package compile

import (
	"errors"
	"fmt"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/format"
)

// Range tables bounded in time
//
// A range table compiled with valid_from/valid_to (an IP-and-time lease
// table, a price list by product-number range and date) answers an
// integer at a time: the rows whose range holds the integer and whose
// validity holds the time. It has both sections (format/match_range.go):
// RANGE, whose segments list every row covering them whatever its
// validity, and TIMEBOUND, one group per RANGE segment over the
// validities of the rows that segment lists. Rows are ranked by their
// ranges in both, as the overlap policy says (narrowest: the smallest
// range first; first and error: source order), so that the rows valid at
// a time come in the order a range table without time gives them. Under
// the error policy two rows may share integers, or share times, but not
// both: a row whose range and validity both overlap another's is refused.

// rangeTimeSections returns the RANGE and TIMEBOUND sections of a range
// table bounded in time.
func (m *matcher) rangeTimeSections(c *compiler) ([]matchSection, error) {
	records := uint64(len(m.rows))
	rank := func(e entry) uint64 {
		if m.policy == format.OverlapNarrowest {
			return uint64(e.hi - e.lo)
		}
		return 0
	}
	rows := make([]format.Interval, len(m.rows))
	byOff := make(map[uint64]entry, len(m.rows))
	for i, e := range m.rows {
		rows[i] = format.Interval{Lo: e.lo, Hi: e.hi, Off: e.off, Line: e.at, Rank: rank(e)}
		byOff[e.off] = e
	}
	rb, err := format.AppendRankedIntervals(nil, rows, 1, records, m.policy, false)
	if err != nil {
		return nil, err
	}
	iv, err := format.DecodeIntervals(rb, 0)
	if err != nil {
		return nil, fmt.Errorf("internal error: the RANGE section does not decode: %w (this is a bug)", err)
	}
	// One group per segment: the validities of the rows it lists.
	var trows []format.Interval
	for i := uint64(0); i < iv.S; i++ {
		first, end, _ := iv.List(i)
		for j := first; j < end; j++ {
			e := byOff[iv.Record(j)]
			v := m.valid[e.at]
			trows = append(trows, format.Interval{Group: i, Lo: v[0], Hi: v[1], Off: e.off, Line: e.at, Rank: rank(e)})
		}
	}
	tb, err := format.AppendRankedIntervals(nil, trows, max(iv.S, 1), records, m.policy, m.policy == format.OverlapError)
	var oe *format.OverlapErr
	if errors.As(err, &oe) {
		a, b := byOff[oe.A.Off], byOff[oe.B.Off]
		src := c.opts.SourceName
		line, col := c.laterPlace(b.at, m.lo)
		aLine, aCol := c.laterPlace(a.at, m.lo)
		return nil, &source.RowError{File: src, Line: line, Column: col,
			Err: fmt.Errorf("rows overlap in range and time: %s valid %s of this row and %s valid %s of the row at %s (use --overlap narrowest|first to allow it)",
				m.span(format.SectionRange, format.Interval{Lo: b.lo, Hi: b.hi}), m.span(format.SectionTimeBound, format.Interval{Lo: oe.B.Lo, Hi: oe.B.Hi}),
				m.span(format.SectionRange, format.Interval{Lo: a.lo, Hi: a.hi}), m.span(format.SectionTimeBound, format.Interval{Lo: oe.A.Lo, Hi: oe.A.Hi}),
				place(src, aLine, aCol))}
	}
	if err != nil {
		return nil, err
	}
	return []matchSection{{format.SectionRange, rb}, {format.SectionTimeBound, tb}}, nil
}
