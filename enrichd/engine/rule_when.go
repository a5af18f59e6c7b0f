package engine

import (
	"bytes"
	"fmt"
	"net/netip"
)

// CondOp is what a Cond tests.
type CondOp uint8

// Condition kinds.
const (
	CondEquals  CondOp = iota + 1 // Field's value is Values[0]
	CondIn                        // Field's value is one of Values
	CondExists                    // Field is present (Exists) or absent (!Exists)
	CondInCIDR                    // Field is an IP address in one of Prefixes
	CondMatched                   // earlier rule Rule found its key
	CondMissed                    // earlier rule Rule did not (it missed, or did not run)
	CondAll                       // every one of Sub holds
	CondAny                       // one of Sub holds
)

// Cond is a rule's When: a condition on an event's fields or on the
// result of an earlier rule. Values are compared as bytes, as a key is:
// a JSON number is its text, a field that is absent equals nothing.
type Cond struct {
	Op       CondOp
	Field    string // Equals, In, Exists, InCIDR: an event field, or one an earlier rule writes
	Values   []string
	Exists   bool
	Prefixes []netip.Prefix
	Rule     string // Matched, Missed: the name of an earlier rule
	Sub      []Cond // All, Any
}

// check checks c as the condition of rule i of rules.
func (c *Cond) check(rules []Rule, i int) error {
	switch c.Op {
	case CondEquals, CondIn, CondExists, CondInCIDR:
		if _, err := checkRuleField(rules, i, c.Field); err != nil {
			return err
		}
		if (c.Op == CondEquals && len(c.Values) != 1) || (c.Op == CondIn && len(c.Values) == 0) {
			return fmt.Errorf("%q: no value to compare with", c.Field)
		}
		if c.Op == CondInCIDR && len(c.Prefixes) == 0 {
			return fmt.Errorf("%q: no network to test", c.Field)
		}
	case CondMatched, CondMissed:
		_, err := earlierRule(rules, i, c.Rule)
		return err
	case CondAll, CondAny:
		if len(c.Sub) == 0 {
			return fmt.Errorf("an empty list of conditions")
		}
		for k := range c.Sub {
			if err := c.Sub[k].check(rules, i); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("no condition")
	}
	return nil
}

// earlierRule returns the index of the rule named name, which must come
// before rule i.
func earlierRule(rules []Rule, i int, name string) (int, error) {
	for j := range rules {
		if rules[j].Name != name {
			continue
		}
		if j >= i {
			return 0, fmt.Errorf("rule %q runs at or after this one: a condition reads only the result of an earlier rule", name)
		}
		return j, nil
	}
	return 0, fmt.Errorf("no rule is named %q", name)
}

// cond is a compiled Cond.
type cond struct {
	op       CondOp
	field    fieldRef
	vals     [][]byte
	exists   bool
	prefixes []netip.Prefix
	bit      uint64 // Matched, Missed: the rule's bit
	sub      []cond
}

// compileCond compiles c, the condition of rule ri.
func (p *Engine) compileCond(ri int, c *Cond, kvIndex map[string]int) (*cond, error) {
	if err := c.check(p.cfgRules, ri); err != nil {
		return nil, err
	}
	out := &cond{op: c.Op, exists: c.Exists, prefixes: c.Prefixes}
	switch c.Op {
	case CondEquals, CondIn, CondExists, CondInCIDR:
		fr, err := p.ruleFieldRef(ri, c.Field, kvIndex)
		if err != nil {
			return nil, err
		}
		out.field = fr
		for _, v := range c.Values {
			out.vals = append(out.vals, []byte(v))
		}
	case CondMatched, CondMissed:
		j, _ := earlierRule(p.cfgRules, ri, c.Rule)
		out.bit = 1 << uint(j)
	case CondAll, CondAny:
		for k := range c.Sub {
			s, err := p.compileCond(ri, &c.Sub[k], kvIndex)
			if err != nil {
				return nil, err
			}
			out.sub = append(out.sub, *s)
		}
	}
	return out, nil
}

// holds reports whether c holds for event i.
func (w *Worker) holds(i int, e *evState, c *cond) bool {
	switch c.op {
	case CondEquals, CondIn:
		v := w.fieldValue(i, e, &c.field)
		if v == nil {
			return false
		}
		for _, x := range c.vals {
			if bytes.Equal(v, x) {
				return true
			}
		}
		return false
	case CondExists:
		return (w.fieldValue(i, e, &c.field) != nil) == c.exists
	case CondInCIDR:
		ip, ok := parseIP(w.fieldValue(i, e, &c.field))
		if !ok {
			return false
		}
		for _, p := range c.prefixes {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	case CondMatched:
		return e.misses&c.bit == 0
	case CondMissed:
		return e.misses&c.bit != 0
	case CondAll:
		for k := range c.sub {
			if !w.holds(i, e, &c.sub[k]) {
				return false
			}
		}
		return true
	case CondAny:
		for k := range c.sub {
			if w.holds(i, e, &c.sub[k]) {
				return true
			}
		}
	}
	return false
}

// skipped marks, with bit in their skips, the events of evs r's
// condition does not hold for, and returns how many.
func (w *Worker) skipped(r *rule, evs []evState, bit uint64) uint64 {
	n := uint64(0)
	for i := range evs {
		if !w.holds(i, &evs[i], r.when) {
			evs[i].skips |= bit
			n++
		}
	}
	return n
}
