package engine

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/tables"
)

// Each rules look every element of an array field up (a JSON member
// holding an array) and write their target as an array of the results,
// in the order of the elements: an object of the columns (or MMDB
// fields) for an element found, and for one not found (or that is not a
// string, number or boolean) null, or the object of the rule's defaults
// when it has some. The event is a hit of the rule when at least one
// element is found; it is a miss (and gets the rule's miss tag) when
// none is, or when the field is absent or not an array, which writes no
// target at all.

// eachPlan is what an Each rule writes, pre-encoded.
type eachPlan struct {
	keys [][]byte // `"name":` of each column or MMDB field
	miss []byte   // an element not found
}

// checkEach checks what an Each rule needs: one field, an array of the
// event (a JSON member), and flat output names.
func checkEach(r *Rule) error {
	if !r.Each {
		return nil
	}
	if len(r.Fields) != 1 {
		return fmt.Errorf("each: takes one field, an array, not a composite key")
	}
	fr, err := parseFieldRef(r.Fields[0])
	if err != nil {
		return err
	}
	if fr.kind != fkAuto && fr.kind != fkJSON {
		return fmt.Errorf("each: field %q is not a JSON member (json.PATH, or a bare name for JSON input)", r.Fields[0])
	}
	for _, m := range append(append([]Rename(nil), r.Columns...), r.MMDBFields...) {
		if strings.Contains(m.To, ".") {
			return fmt.Errorf("each: %q: the elements are flat objects, output names have no dots", m.To)
		}
	}
	return nil
}

func newEachPlan(r *Rule) *eachPlan {
	ep := &eachPlan{miss: []byte("null")}
	names := r.Columns
	if r.MMDB {
		names = r.MMDBFields
	}
	for _, c := range names {
		ep.keys = append(ep.keys, jsonstr.AppendKeyS(nil, c.To))
	}
	if len(r.Defaults) > 0 {
		o := jsonstr.Object{}
		o.Begin()
		for _, d := range r.Defaults {
			o.StringS(d.From, d.To)
		}
		ep.miss = o.End()
	}
	return ep
}

// runEach is runRule for an Each rule.
func (w *Worker) runEach(ri int, r *rule, snap *tables.Snapshot, evs []evState) {
	rw := &w.rw[ri]
	w.useTable(r, rw, snap)
	bit := uint64(1) << uint(ri)
	rw.eachBuf = rw.eachBuf[:0]
	for i := range evs {
		e := &evs[i]
		rw.eachSpan[i] = [2]int32{}
		if r.when != nil && !w.holds(i, e, r.when) {
			e.misses |= bit
			e.skips |= bit
			rw.nSkipped++
			continue
		}
		if rw.lut == nil && rw.mm == nil {
			e.tags |= tagNoTable
			e.misses |= bit
			rw.nNoTable++
			rw.nMisses++
			continue
		}
		start := len(rw.eachBuf)
		found, ok := 0, false
		if arr := w.arrayValue(e, &r.fields[0]); arr != nil {
			rw.eachBuf = append(rw.eachBuf, '[')
			first := true
			ok = parse.EachArrayElem(arr, func(v []byte, kind byte) bool {
				if !first {
					rw.eachBuf = append(rw.eachBuf, ',')
				}
				first = false
				if w.appendElem(r, rw, v, kind) {
					found++
				}
				return true
			})
		}
		if !ok {
			rw.eachBuf = rw.eachBuf[:start]
			e.misses |= bit
			rw.nMisses++
			continue
		}
		rw.eachBuf = append(rw.eachBuf, ']')
		rw.eachSpan[i] = [2]int32{int32(start), int32(len(rw.eachBuf))}
		if found == 0 {
			e.misses |= bit
			rw.nMisses++
		} else {
			rw.nHits++
		}
	}
}

// arrayValue returns the array event e holds at f, or nil.
func (w *Worker) arrayValue(e *evState, f *fieldRef) []byte {
	if f.kind == fkAuto && e.kind != JSON {
		return nil
	}
	v, kind, ok := parse.JSONField(e.body, f.name)
	if !ok || kind != parse.KindArray {
		return nil
	}
	return v
}

// appendElem looks one element up and appends its result to rw.eachBuf;
// it reports whether the element was found.
func (w *Worker) appendElem(r *rule, rw *ruleWork, v []byte, kind byte) bool {
	var key []byte
	switch kind {
	case parse.KindString, parse.KindNumber, parse.KindBool:
		key = v
	case parse.KindEscaped:
		s := len(w.scratch)
		w.scratch = parse.AppendUnquote(w.scratch, v)
		key = w.scratch[s:len(w.scratch):len(w.scratch)]
	}
	ep := r.each
	buf := rw.eachBuf
	switch {
	case key == nil:
	case rw.lut != nil:
		view, ok := rw.lut.Lookup(key)
		if !ok || view.Len() == 0 {
			break
		}
		rw.eachBuf = w.appendRowObject(r, rw, buf, view)
		return true
	case rw.mm != nil:
		ip, ok := parseIP(key)
		if !ok {
			rw.nBadKey++
			break
		}
		vals := rw.mmVals[:rw.nf]
		m, err := rw.mm.LookupFields(ip, r.mmFields, vals)
		if err != nil || !m.Found() {
			break
		}
		buf = append(buf, '{')
		n := 0
		for j := range vals {
			mark := len(buf)
			if n > 0 {
				buf = append(buf, ',')
			}
			var ok bool
			if buf, ok = mmValue(append(buf, ep.keys[j]...), vals[j]); !ok {
				buf = buf[:mark]
				continue
			}
			n++
		}
		rw.eachBuf = append(buf, '}')
		return true
	}
	rw.eachBuf = append(buf, ep.miss...)
	return false
}

// eachValue returns the array an Each rule wrote for event i, or nil.
func (rw *ruleWork) eachValue(i int) []byte {
	sp := rw.eachSpan[i]
	return rw.eachBuf[sp[0]:sp[1]]
}
