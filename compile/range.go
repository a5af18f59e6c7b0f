package compile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/config"
)

// Match kinds.
const (
	MatchExact  = "exact"  // a row per key (the default)
	MatchSuffix = "suffix" // domain names: a key and every name below it
	MatchRange  = "range"  // an integer within the rows' inclusive from,to
	// MatchWildcard: globs, '*' any run of bytes; the most literal
	// characters win.
	MatchWildcard = "wildcard"
	// MatchPattern: regular expressions (RE2 syntax), matched anywhere
	// unless anchored; the first in source order wins.
	MatchPattern = "pattern"
)

// checkMatch checks the options of suffix, range and time-bounded tables.
func (o *Options) checkMatch(s config.Scope) {
	switch o.Match {
	case "", MatchExact:
		if len(o.RangeColumns) > 0 {
			s.Errorf("range_columns", "range columns need match: range")
		}
	case MatchRange:
		if len(o.RangeColumns) != 2 || o.RangeColumns[0] == "" || o.RangeColumns[1] == "" || o.RangeColumns[0] == o.RangeColumns[1] {
			s.Errorf("range_columns", "a range table needs two columns, from,to (inclusive integers or IPv4 addresses)")
		}
		if len(o.Key) > 0 && !slices.Equal(o.Key, o.RangeColumns) {
			s.Errorf("key", "a range table is keyed by its range columns: give no key, or the range columns")
		}
		if o.FoldCase {
			s.Errorf("fold_case", "a range table has integer keys: nothing to fold")
		}
	case MatchSuffix:
		if len(o.Key) > 1 {
			s.Errorf("match", "a suffix table has one key column, not %d", len(o.Key))
		}
		if len(o.RangeColumns) > 0 {
			s.Errorf("range_columns", "range columns need match: range")
		}
	case MatchWildcard, MatchPattern:
		o.checkLiteralMatch(s)
	default:
		s.Errorf("match", "unknown match kind %q (want exact, suffix, range, wildcard or pattern)", o.Match)
	}
	if o.ValidFrom != "" && o.ValidFrom == o.ValidTo {
		s.Errorf("valid_to", "valid_from and valid_to are the same column %q", o.ValidFrom)
	}
	if _, err := format.ParseOverlap(o.Overlap); err != nil {
		s.Errorf("overlap", "%v", err)
	}
	if o.Overlap != "" && o.Match != MatchRange && o.ValidFrom == "" && o.ValidTo == "" {
		s.Errorf("overlap", "overlap applies to range and time-bounded tables only")
	}
	if o.OnDuplicate != "" && o.OnDuplicate != DuplicateError && (o.Match == MatchRange || o.ValidFrom != "" || o.ValidTo != "") {
		s.Errorf("on_duplicate", "a range or time-bounded table keeps every row: say which wins with overlap instead")
	}
}

// keyColumns returns the key columns of the options: the range columns
// of a range table.
func (o *Options) keyColumns() []string {
	if o.Match == MatchRange && len(o.Key) == 0 {
		return o.RangeColumns
	}
	return o.Key
}

// matcher builds the RANGE or TIMEBOUND section of a table, or both for
// a range table bounded in time (range_time.go).
type matcher struct {
	kind   uint32 // 0 for an exact table
	policy uint32
	lo, hi int // source index of the bound columns; -1 for an absent one
	rows   []entry
	// A range table bounded in time: the source index of its validity
	// columns (-1 for an absent one), and each row's validity by where it
	// is in the source (entry.at).
	timed    bool
	vlo, vhi int
	valid    map[int64][2]int64
	// A range table's bounds are IPv4 addresses (FeatureRangeIPv4) when
	// the first row's from is one; decided says the first row was read.
	ipv4, decided bool
}

func (m *matcher) on() bool { return m.kind != 0 }

func (m *matcher) init(c *compiler, index map[string]int, find func(name, what string) (int, error)) error {
	o := &c.opts
	m.policy, _ = format.ParseOverlap(o.Overlap) // checked by Validate
	m.lo, m.hi = -1, -1
	col := func(name, what string) (int, error) {
		if name == "" {
			return -1, nil
		}
		if !slices.Contains(c.cols, name) {
			if _, ok := index[name]; ok {
				return 0, fmt.Errorf("%s %q must be among the stored columns (add it to --columns)", what, name)
			}
		}
		return find(name, what+" %q")
	}
	var err error
	switch {
	case o.Match == MatchRange:
		m.kind = format.SectionRange
		if m.lo, err = col(o.RangeColumns[0], "range column"); err != nil {
			return err
		}
		if m.hi, err = col(o.RangeColumns[1], "range column"); err != nil {
			return err
		}
		if o.ValidFrom != "" || o.ValidTo != "" {
			m.timed, m.valid = true, map[int64][2]int64{}
			if m.vlo, err = col(o.ValidFrom, "valid_from column"); err != nil {
				return err
			}
			m.vhi, err = col(o.ValidTo, "valid_to column")
		}
	case o.ValidFrom != "" || o.ValidTo != "":
		m.kind = format.SectionTimeBound
		if m.lo, err = col(o.ValidFrom, "valid_from column"); err != nil {
			return err
		}
		m.hi, err = col(o.ValidTo, "valid_to column")
	}
	return err
}

// bounds returns the inclusive bounds of a row.
func (m *matcher) bounds(c *compiler, fields [][]byte, line int64) (lo, hi int64, err error) {
	rowErr := func(col int, err error) error {
		return c.fieldError(line, col, err)
	}
	if m.kind == format.SectionRange {
		if !m.decided {
			_, ierr := strconv.ParseInt(string(fields[m.lo]), 10, 64)
			_, ip := format.ParseIPv4(fields[m.lo])
			m.ipv4, m.decided = ierr != nil && ip, ierr == nil || ip
		}
		if lo, err = m.bound(fields[m.lo]); err != nil {
			return 0, 0, rowErr(m.lo, fmt.Errorf("range column %q: %q %w", c.opts.RangeColumns[0], truncate(fields[m.lo]), err))
		}
		if hi, err = m.bound(fields[m.hi]); err != nil {
			return 0, 0, rowErr(m.hi, fmt.Errorf("range column %q: %q %w", c.opts.RangeColumns[1], truncate(fields[m.hi]), err))
		}
		if lo > hi {
			return 0, 0, rowErr(m.lo, fmt.Errorf("range %s is empty: from is above to (both are inclusive)", strings.Replace(strings.Trim(m.span(m.kind, format.Interval{Lo: lo, Hi: hi}), "[]"), ", ", "-", 1)))
		}
		if m.timed {
			vlo, vhi, err := validity(fields, m.vlo, m.vhi, rowErr)
			if err != nil {
				return 0, 0, err
			}
			m.valid[c.cur.row.at] = [2]int64{vlo, vhi}
		}
		return lo, hi, nil
	}
	return validity(fields, m.lo, m.hi, rowErr)
}

// bound reads one bound of a range: an integer, or in an IPv4 range
// table an address (its number).
func (m *matcher) bound(v []byte) (int64, error) {
	if m.ipv4 {
		ip, ok := format.ParseIPv4(v)
		if !ok {
			return 0, errors.New("is not an IPv4 address (the table's first row gives addresses)")
		}
		return int64(ip), nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		if _, ok := format.ParseIPv4(v); ok && m.decided {
			return 0, errors.New("is not an integer (the table's first row gives integers)")
		}
		return 0, errors.New("is not an integer")
	}
	return n, nil
}

// validity returns the inclusive bounds of the validity in the columns
// from and to of a row (-1: absent, an open end).
func validity(fields [][]byte, fromCol, toCol int, rowErr func(col int, err error) error) (lo, hi int64, err error) {
	var from, to []byte
	if fromCol >= 0 {
		from = fields[fromCol]
	}
	if toCol >= 0 {
		to = fields[toCol]
	}
	lo, hi, err = format.Validity(from, to)
	if err != nil {
		col := fromCol
		if _, _, ferr := format.ParseTime(from); ferr == nil && toCol >= 0 {
			col = toCol
		}
		if col < 0 {
			col = toCol
		}
		return 0, 0, rowErr(col, err)
	}
	return lo, hi, nil
}

// groupKeys is dedupe for range and time-bounded tables: every row is
// kept (in m.rows, with rep the record of the first row of its key), and
// the entries keep the first row of each key, for the perfect hash.
func (c *compiler) groupKeys(f *os.File, dataStart, dataLen uint64) error {
	slices.SortFunc(c.entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.at, b.at))
	})
	var buf []byte
	out := c.entries[:0:0]
	for i := 0; i < len(c.entries); {
		j := i + 1
		for j < len(c.entries) && c.entries[j].hash == c.entries[i].hash {
			j++
		}
		run := c.entries[i:j]
		if len(run) == 1 {
			run[0].rep = run[0].off
		} else {
			// Equal hashes: almost always one key; distinct keys with one
			// hash stay apart (the perfect hash reseeds for them).
			first := map[string]uint64{}
			for a := range run {
				r, err := readRecord(f, dataStart, dataLen, run[a].off, len(c.cols), buf)
				if err != nil {
					return err
				}
				buf = r.Bytes()
				k := string(r.Key())
				if rep, ok := first[k]; ok {
					run[a].rep = rep
				} else {
					first[k] = run[a].off
					run[a].rep = run[a].off
				}
			}
		}
		i = j
	}
	c.match.rows = c.entries
	for _, e := range c.entries {
		if e.rep == e.off {
			out = append(out, e)
		}
	}
	c.entries = out
	return nil
}

// matchSection is a section the matcher writes: its kind and bytes.
type matchSection struct {
	kind uint32
	body []byte
}

// sections returns the table's RANGE or TIMEBOUND section, or both for a
// range table bounded in time, once the perfect hash is built.
func (m *matcher) sections(c *compiler, mphf *format.MPHF) ([]matchSection, error) {
	if m.timed {
		return m.rangeTimeSections(c)
	}
	kind, body, err := m.section(c, mphf)
	if err != nil {
		return nil, err
	}
	return []matchSection{{kind, body}}, nil
}

// section returns the kind and bytes of the table's RANGE or TIMEBOUND
// section, once the perfect hash is built.
func (m *matcher) section(c *compiler, mphf *format.MPHF) (uint32, []byte, error) {
	rows := make([]format.Interval, len(m.rows))
	groups := uint64(1)
	var pos map[uint64]uint64
	if m.kind == format.SectionTimeBound {
		groups = max(uint64(len(c.entries)), 1) // a table of no rows has one empty group
		pos = make(map[uint64]uint64, len(c.entries))
		for _, e := range c.entries {
			pos[e.off] = mphf.Index(e.hash)
		}
		if c.lits != nil {
			pos = c.lits.rank // a wildcard or pattern table: a group per rank
		}
	}
	for i, e := range m.rows {
		rows[i] = format.Interval{Group: pos[e.rep], Lo: e.lo, Hi: e.hi, Off: e.off, Line: e.at}
	}
	b, err := format.AppendIntervals(nil, rows, groups, uint64(len(m.rows)), m.policy)
	var oe *format.OverlapErr
	if errors.As(err, &oe) {
		field := m.lo
		if m.lo < 0 {
			field = m.hi
		}
		what := "ranges"
		if m.kind == format.SectionTimeBound {
			what = "validities of one key"
		}
		src := c.opts.SourceName
		line, col := c.laterPlace(oe.B.Line, field)
		aLine, aCol := c.laterPlace(oe.A.Line, field)
		return 0, nil, &source.RowError{File: src, Line: line, Column: col,
			Err: fmt.Errorf("%s overlap: %s of this row and %s of the row at %s (use --overlap narrowest|first to allow it)",
				what, m.span(m.kind, oe.B), m.span(m.kind, oe.A), place(src, aLine, aCol))}
	}
	return m.kind, b, err
}

// span writes a row's bounds as the source gave them: [from, to] for a
// range (addresses in an IPv4 range table), [from, to) for a validity.
func (m *matcher) span(kind uint32, iv format.Interval) string {
	if kind == format.SectionRange && m.ipv4 {
		return "[" + string(format.AppendIPv4(nil, uint32(iv.Lo))) + ", " + string(format.AppendIPv4(nil, uint32(iv.Hi))) + "]" //nolint:gosec // an IPv4 table's bounds are 32-bit
	}
	if kind == format.SectionRange {
		return fmt.Sprintf("[%d, %d]", iv.Lo, iv.Hi)
	}
	return "[" + timeBound(iv.Lo, false) + ", " + timeBound(iv.Hi, true) + ")"
}

func timeBound(v int64, to bool) string {
	switch {
	case !to && v == minInt64, to && v == maxInt64:
		return "open"
	case to:
		v++
	}
	return strconv.FormatInt(v, 10)
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// features returns the header's feature bits for the table's kind.
func (m *matcher) features() uint32 {
	switch m.kind {
	case format.SectionRange:
		f := format.FeatureRange
		if m.timed {
			f |= format.FeatureTimeBound
		}
		if m.ipv4 {
			f |= format.FeatureRangeIPv4
		}
		return f
	case format.SectionTimeBound:
		return format.FeatureTimeBound
	}
	return 0
}

// meta records the match options in the META section.
func (m *matcher) meta(o *Options, meta *Meta) {
	if !m.on() {
		return
	}
	meta.Match, meta.RangeColumns, meta.ValidFrom, meta.ValidTo = o.Match, o.RangeColumns, o.ValidFrom, o.ValidTo
	meta.Overlap = format.OverlapNames[m.policy]
}
