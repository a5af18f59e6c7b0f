package compile

import (
	"fmt"
	"slices"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/config"
)

// literalKeys keeps the keys of the rows of a wildcard or pattern table
// as they are written, for its literal index (format.AppendLiteralIndex).
type literalKeys struct {
	offs    []uint64   // record offsets, in source order
	keys    [][]byte   // the rows' keys
	anchors [][][]byte // pattern tables: each row's anchors
	next    [][]byte   // the anchors of the key built last
	warn    error      // the warning about the key built last
	// rank is the rank of each live row, by record offset: the TIMEBOUND
	// group of its key in a table bounded in time.
	rank map[uint64]uint64
}

// add keeps the row written at off, of key.
func (l *literalKeys) add(off uint64, key []byte) {
	l.offs = append(l.offs, off)
	l.keys = append(l.keys, slices.Clone(key))
	l.anchors = append(l.anchors, l.next)
}

// addLiteral keeps the row written at off, of key, from the source's
// line, with its warning.
func (c *compiler) addLiteral(off uint64, key []byte, line int64) {
	c.lits.add(off, key)
	if c.lits.warn == nil {
		return
	}
	c.stats.Unanchored++
	if len(c.stats.Warnings) < c.opts.MaxBadRowErrors {
		c.stats.Warnings = append(c.stats.Warnings, c.fieldError(line, c.keyIdx[0], c.lits.warn))
	}
	c.lits.warn = nil
}

// literalKey builds the key of a row of a wildcard or pattern table:
// its one key column, case-folded in a wildcard table with FoldCase. A
// pattern is compiled, so that a bad one is an error at its row, checked
// (format.CheckPattern), and its anchors kept; one without anchors is
// warned about (an error with StrictPatterns).
func (c *compiler) literalKey(dst []byte, fields [][]byte) ([]byte, error) {
	v := fields[c.keyIdx[0]]
	if c.kind == format.MatchPattern {
		a, err := format.PatternAnchors(v)
		if err == nil {
			err = format.CheckPattern(v)
		}
		if err == nil && a == nil {
			err = fmt.Errorf("no literal is in every match of it: it is run on every lookup")
			if !c.opts.StrictPatterns {
				c.lits.warn, err = fmt.Errorf("key column %q: %q: %w", c.opts.Key[0], truncate(v), err), nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("key column %q: %q: %w", c.opts.Key[0], truncate(v), err)
		}
		c.lits.next = a
		return append(dst, v...), nil
	}
	if err := format.CheckWildcard(v); err != nil {
		return nil, fmt.Errorf("key column %q: %w", c.opts.Key[0], err)
	}
	if c.opts.FoldCase {
		return format.FoldKey(dst, v), nil
	}
	return append(dst, v...), nil
}

// literalSection writes the WILDCARD or PATTERN section of the live rows
// (those a duplicate did not drop).
func (c *compiler) literalSection(section func(kind uint32, body func() error) error, w *countingWriter) error {
	live := make([]uint64, len(c.entries))
	for i, e := range c.entries {
		live[i] = e.off
	}
	slices.Sort(live)
	l := c.lits
	var (
		keys    [][]byte
		offs    []uint64
		anchors [][][]byte
	)
	for i, off := range l.offs {
		if _, ok := slices.BinarySearch(live, off); ok {
			keys, offs, anchors = append(keys, l.keys[i]), append(offs, off), append(anchors, l.anchors[i])
		}
	}
	var rows []format.LiteralRow
	kind := format.SectionWildcard
	if c.kind == format.MatchPattern {
		kind = format.SectionPattern
		rows = make([]format.LiteralRow, len(keys))
		for i := range keys {
			rows[i] = format.LiteralRow{Off: offs[i], Anchors: anchors[i]}
		}
	} else {
		rows = format.WildcardRows(keys, offs, format.GlobSyntax)
	}
	l.rank = make(map[uint64]uint64, len(rows))
	for r, row := range rows {
		l.rank[row.Off] = uint64(r)
	}
	return section(uint32(kind), func() error {
		_, err := w.Write(format.AppendLiteralIndexFlags(nil, c.literalFlags(), rows))
		return err
	})
}

// literalFlags returns the flags word of the table's literal index: the
// glob syntax of a wildcard table.
func (c *compiler) literalFlags() uint64 {
	if c.kind == format.MatchWildcard {
		return uint64(format.GlobSyntax)
	}
	return 0
}

// checkLiteralMatch checks the options of a wildcard or pattern table:
// one key column, and for patterns no case folding (a pattern says
// (?i) itself). Either may be bounded in time.
func (o *Options) checkLiteralMatch(s config.Scope) {
	if len(o.Key) > 1 {
		s.Errorf("match", "a %s table has one key column, not %d", o.Match, len(o.Key))
	}
	if len(o.RangeColumns) > 0 {
		s.Errorf("range_columns", "range columns need match: range")
	}
	if o.Match == MatchPattern && o.FoldCase {
		s.Errorf("fold_case", "a pattern table does not fold its patterns: start a pattern with (?i) to ignore case")
	}
}
