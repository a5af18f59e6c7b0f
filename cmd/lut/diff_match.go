package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// Diffs of range and time-bounded tables
//
// In a range or time-bounded table keys repeat: a range table's key is
// its from,to, which rows bounded in time share; a time-bounded table
// has a row per key and validity. lut diff names such a row by its
// identity instead: [from, to] in a range table, the key and its validity
// in a time-bounded one, both in a range table bounded in time. The
// bounds are read as numbers (05 and 5 are one range; an RFC 3339
// validity and the same second in epoch seconds are one validity) and
// written as such, times in RFC 3339 UTC. Rows of one identity in both
// tables are compared column by column; an identity only one table has is
// added or removed. Rows that share an identity (allowed by --overlap)
// are paired in source order.

// identity names the rows of a range or time-bounded table.
type identity struct {
	from, to   int // range columns, or -1
	start, end int // validity columns (-1 for an open bound), when timed
	timed      bool
}

// identityOf returns how t's rows are named, or nil for a table whose
// rows have a key each (exact and suffix tables).
func identityOf(t *reader.Table) *identity {
	if t.Overlap() == "" {
		return nil
	}
	m := t.Meta()
	id := &identity{from: -1, to: -1, start: -1, end: -1, timed: t.TimeBounded()}
	if t.MatchKind() == format.MatchRange && len(m.RangeColumns) == 2 {
		id.from, id.to = t.ColumnIndex(m.RangeColumns[0]), t.ColumnIndex(m.RangeColumns[1])
	}
	if id.timed {
		if m.ValidFrom != "" {
			id.start = t.ColumnIndex(m.ValidFrom)
		}
		if m.ValidTo != "" {
			id.end = t.ColumnIndex(m.ValidTo)
		}
	}
	return id
}

// of returns the identity of row v.
func (id *identity) of(v reader.View) string {
	var b strings.Builder
	if id.from >= 0 && id.to >= 0 {
		b.WriteString("[" + number(v.Col(id.from)) + ", " + number(v.Col(id.to)) + "]")
	} else {
		fmt.Fprintf(&b, "%q", v.Key())
	}
	if id.timed {
		var from, to []byte
		if id.start >= 0 {
			from = v.Col(id.start)
		}
		if id.end >= 0 {
			to = v.Col(id.end)
		}
		b.WriteString(" valid " + validity(from, to))
	}
	return b.String()
}

// number writes an integer bound, or an IPv4 address of an IPv4 range
// table, in its normal form (the text itself if it is neither: only a
// damaged table holds such a row).
func number(v []byte) string {
	if ip, ok := format.ParseIPv4(v); ok {
		return string(format.AppendIPv4(nil, ip))
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return strconv.Quote(string(v))
	}
	return strconv.FormatInt(n, 10)
}

// validity writes a row's validity as [from, to), times in RFC 3339 UTC,
// an open end as "open".
func validity(from, to []byte) string {
	lo, hi, err := format.Validity(from, to)
	if err != nil {
		return fmt.Sprintf("[%q, %q)", from, to)
	}
	bound := func(sec int64, open bool) string {
		if open {
			return "open"
		}
		return time.Unix(sec, 0).UTC().Format(time.RFC3339)
	}
	return "[" + bound(lo, lo == math.MinInt64) + ", " + bound(hi+1, hi == math.MaxInt64) + ")"
}

// diffIdentities compares tables row by row by their identities.
func diffIdentities(a, b *reader.Table, common [][2]int, limit int) (diffResult, error) {
	var d diffResult
	ia, ib := identityOf(a), identityOf(b)
	if ia == nil {
		ia = &identity{from: -1, to: -1}
	}
	if ib == nil {
		ib = &identity{from: -1, to: -1}
	}
	type oldRow struct {
		v       reader.View
		id      string
		matched bool
	}
	var olds []oldRow
	byID := map[string][]int{} // identity -> indexes in olds not yet matched, in source order
	err := records(a, func(v reader.View) bool {
		id := ia.of(v)
		byID[id] = append(byID[id], len(olds))
		olds = append(olds, oldRow{v: v, id: id})
		return true
	})
	if err != nil {
		return d, err
	}
	err = records(b, func(w reader.View) bool {
		id := ib.of(w)
		idx := byID[id]
		if len(idx) == 0 {
			d.added++
			if len(d.addedKeys) < limit {
				d.addedKeys = append(d.addedKeys, id)
			}
			return true
		}
		byID[id] = idx[1:]
		o := &olds[idx[0]]
		o.matched = true
		if cols := changedColumns(a, common, o.v, w); len(cols) > 0 {
			d.changed++
			if len(d.changedLines) < limit {
				d.changedLines = append(d.changedLines, id+": "+joinComma(cols))
			}
		}
		return true
	})
	for _, o := range olds {
		if !o.matched {
			d.removed++
			if len(d.removedKeys) < limit {
				d.removedKeys = append(d.removedKeys, o.id)
			}
		}
	}
	return d, err
}
