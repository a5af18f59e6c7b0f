package engine

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// Chained rules: a rule's field (or a When condition's) may name a field
// an earlier rule writes, TARGET.NAME, so that the value one rule found
// is the key of the next (IP -> site -> owner). Rules run in order over
// the whole batch, so an earlier rule's row is there when a later rule
// reads it.

// checkRuleField parses field f of rule i (of rules): a field under the
// target of an earlier rule reads what that rule writes; one under the
// target of a later rule is an error, as it is not written yet when rule
// i runs. A field under the rule's own target is read from the event as
// received (a rule may write host.owner from host).
func checkRuleField(rules []Rule, i int, f string) (fieldRef, error) {
	fr, err := parseFieldRef(f)
	if err != nil || fr.kind != fkAuto {
		// kv.NAME, json.PATH, sd.ID.NAME and the header fields are the
		// event's.
		return fr, err
	}
	best := -1
	for j := range rules {
		t := rules[j].Target
		if t == "" || !strings.HasPrefix(f, t+".") {
			continue
		}
		if j == i {
			continue
		}
		if j > i {
			return fieldRef{}, fmt.Errorf("%q is under the target of rule %q (%s), which runs later: a rule reads only what earlier rules write", f, rules[j].Name, t)
		}
		if best < 0 || len(t) > len(rules[best].Target) {
			best = j
		}
	}
	if best < 0 {
		return fr, nil
	}
	src := &rules[best]
	if src.Each {
		return fieldRef{}, fmt.Errorf("%q is under the target of rule %q, which writes an array (each): it is not a key", f, src.Name)
	}
	if src.MaxMatches > 1 {
		return fieldRef{}, fmt.Errorf("%q is under the target of rule %q, which writes an array (max_matches): it is not a key", f, src.Name)
	}
	name := f[len(src.Target)+1:]
	fr = fieldRef{kind: fkRule, rule: best, name: []byte(name), col: -1}
	switch {
	case src.MMDB:
		for k, m := range src.MMDBFields {
			if m.To == name {
				fr.col = k
			}
		}
	case src.Columns == nil:
		fr.column = name // every column, under its own name
	default:
		for _, c := range src.Columns {
			if c.To == name {
				fr.column = c.From
			}
		}
	}
	hasDefault := false
	for _, d := range src.Defaults {
		if d.From == name {
			hasDefault = true
		}
	}
	if fr.col < 0 && fr.column == "" && !hasDefault {
		return fieldRef{}, fmt.Errorf("%q: rule %q writes no field %q under its target %s", f, src.Name, name, src.Target)
	}
	return fr, nil
}

// ruleFieldRef is fieldRef for field f of rule ri: a field an earlier
// rule writes is given a slot among that rule's chained columns.
func (p *Engine) ruleFieldRef(ri int, f string, kvIndex map[string]int) (fieldRef, error) {
	fr, err := checkRuleField(p.cfgRules, ri, f)
	if err != nil {
		return fr, err
	}
	if fr.kind != fkRule {
		return p.fieldRef(f, kvIndex)
	}
	src := p.rules[fr.rule]
	for _, d := range src.cfg.Defaults {
		if d.From == string(fr.name) {
			fr.def = []byte(d.To)
		}
	}
	if fr.column != "" {
		fr.col = len(src.chainCols)
		src.chainCols = append(src.chainCols, fr.column)
	} else if !src.cfg.MMDB {
		fr.col = -1 // only a default
	}
	return fr, nil
}

// ruleValue returns what rule f.rule wrote for event i at f.name: a
// column of its row, a field of its MMDB record, or its default on a
// miss; nil when it wrote nothing there (a skipped rule writes nothing).
func (w *Worker) ruleValue(i int, e *evState, f *fieldRef) []byte {
	bit := uint64(1) << uint(f.rule)
	if e.misses&bit != 0 {
		if e.skips&bit != 0 {
			return nil
		}
		return f.def
	}
	rw := &w.rw[f.rule]
	switch {
	case f.col < 0:
		return nil
	case rw.lut != nil:
		ci := rw.chainIdx[f.col]
		if ci < 0 {
			return nil
		}
		if v := rw.views[i].Col(ci); len(v) > 0 {
			return v
		}
	case rw.mm != nil:
		return w.mmKey(rw.mmVals[i*rw.nf+f.col])
	}
	return nil
}

// mmKey returns an MMDB value as key bytes: a string as it is, a number
// or a boolean as JSON writes it; nil for the rest.
func (w *Worker) mmKey(v mmdb.Value) []byte {
	switch v.Kind() {
	case mmdb.KindString, mmdb.KindBytes:
		return v.Bytes()
	case mmdb.KindUint16, mmdb.KindUint32, mmdb.KindUint64, mmdb.KindInt32, mmdb.KindUint128,
		mmdb.KindDouble, mmdb.KindFloat, mmdb.KindBool:
		s := len(w.scratch)
		var ok bool
		if w.scratch, ok = mmValue(w.scratch, v); !ok {
			w.scratch = w.scratch[:s]
			return nil
		}
		return w.scratch[s:len(w.scratch):len(w.scratch)]
	}
	return nil
}

// CheckRuleField checks field f of rule i of rules as a key: an event
// field, or a field an earlier rule writes (never a later rule's).
func CheckRuleField(rules []Rule, i int, f string) error {
	_, err := checkRuleField(rules, i, f)
	return err
}

// CheckRule checks what rule i of rules adds to a plain lookup: its When
// (the fields and rules it reads), and its Each.
func CheckRule(rules []Rule, i int) (when, each error) {
	r := &rules[i]
	if r.When != nil {
		when = r.When.check(rules, i)
	}
	return when, checkEach(r)
}
