package engine

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader"
)

// Several matches
//
// A rule with MaxMatches above 1 looks its key up for up to that many
// rows (reader.Table.Match, or MatchAt at the event's time) and writes
// its target as a JSON array of them, the most specific first: a suffix
// table's longest suffix first, a range table's rows in its --overlap
// order (narrowest first, or source order), a time-bounded table's rows
// valid at the time in that order. Each element is the object of the
// rule's columns, as a one-match rule writes its target. An exact table
// gives an array of its one row: the shape of the output is the rule's,
// whatever the table's kind. A key that matches nothing is a miss, as
// with one match: the miss tag, and the target written as an array of
// the defaults object when the rule has defaults (nothing otherwise).

// MaxMatchesLimit is the largest MaxMatches a rule may have.
const MaxMatchesLimit = 1000

// CheckMaxMatches checks a rule's MaxMatches: from 0 (one) to
// MaxMatchesLimit, and above 1 only on a .lut rule with a target, no
// each, and flat output names.
func CheckMaxMatches(r *Rule) error {
	switch {
	case r.MaxMatches < 0 || r.MaxMatches > MaxMatchesLimit:
		return fmt.Errorf("must be an integer from 1 to %d", MaxMatchesLimit)
	case r.MaxMatches <= 1:
		return nil
	case r.MMDB:
		return fmt.Errorf("an .mmdb table answers one network (the longest prefix); several matches need a .lut table")
	case r.Each:
		return fmt.Errorf("an each rule writes one result per element; it cannot have several matches")
	case r.Target == "":
		return fmt.Errorf("the rule writes an array of rows, and needs a target to write it under")
	}
	for _, c := range r.Columns {
		if strings.Contains(c.To, ".") {
			return fmt.Errorf("%q: the rows are flat objects, output names have no dots", c.To)
		}
	}
	return nil
}

// newMultiPlan is what a several-match rule writes, pre-encoded: the
// keys of its columns, and on a miss an array of its defaults object
// (nil without defaults).
func newMultiPlan(r *Rule) *eachPlan {
	ep := newEachPlan(r)
	if len(r.Defaults) == 0 {
		ep.miss = nil
	} else {
		ep.miss = append(append([]byte{'['}, ep.miss...), ']')
	}
	return ep
}

// matchRows is the lookup of a several-match rule: for each event with a
// key, up to r.cfg.MaxMatches rows of t, written to rw.eachBuf as the
// event's array. It sets hit and returns the number of hits.
func (w *Worker) matchRows(r *rule, rw *ruleWork, t *reader.Table, keys [][]byte, times []int64, hit []bool) uint64 {
	out := rw.multi
	var hits uint64
	for i, k := range keys {
		if k == nil {
			continue
		}
		var n int
		if times != nil {
			n = t.MatchAt(k, unixSecond(times[i]), out)
		} else {
			n = t.Match(k, out)
		}
		if n == 0 {
			continue
		}
		hit[i] = true
		hits++
		start := len(rw.eachBuf)
		buf := append(rw.eachBuf, '[')
		for j, v := range out[:n] {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = w.appendRowObject(r, rw, buf, v)
		}
		rw.eachBuf = append(buf, ']')
		rw.eachSpan[i] = [2]int32{int32(start), int32(len(rw.eachBuf))}
	}
	return hits
}

// appendRowObject appends the object of the rule's columns of row v (the
// whole row when the rule keeps every column).
func (w *Worker) appendRowObject(r *rule, rw *ruleWork, buf []byte, v reader.View) []byte {
	if r.cfg.Columns == nil {
		return rw.row.Append(buf, v)
	}
	buf = append(buf, '{')
	n := 0
	for j := range r.cfg.Columns {
		ci := rw.colIdx[j]
		if ci < 0 {
			continue
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
		buf = append(buf, r.each.keys[j]...)
		if c := v.Col(ci); rw.colType == nil {
			buf = jsonstr.AppendString(buf, c)
		} else {
			buf = rw.appendTyped(buf, c, ci)
		}
	}
	return append(buf, '}')
}

// multiMisses writes the defaults array of a several-match rule for the
// events that missed (not those its when skipped).
func (rw *ruleWork) multiMisses(r *rule, evs []evState, hit []bool, bit uint64) {
	if r.each.miss == nil {
		return
	}
	for i := range evs {
		if hit[i] || evs[i].skips&bit != 0 {
			continue
		}
		start := len(rw.eachBuf)
		rw.eachBuf = append(rw.eachBuf, r.each.miss...)
		rw.eachSpan[i] = [2]int32{int32(start), int32(len(rw.eachBuf))}
	}
}

// unixSecond is a time in Unix nanoseconds taken down to its second.
func unixSecond(ns int64) int64 {
	sec := ns / 1e9
	if ns%1e9 < 0 {
		sec-- // before 1970: down, not toward zero
	}
	return sec
}
