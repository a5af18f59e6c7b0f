package enrichd

import (
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/internal/config"
)

// decodeCond reads a rule's when: one test (field with equals, in,
// exists or in_cidr; matched or missed with a rule's name) or all / any
// of a list of conditions. Its problems are reported where they were
// written.
func decodeCond(d *config.Decoder, n *yaml.Node, field string) *engine.Cond {
	c := &engine.Cond{}
	f := func(key string) string { return config.Field(field, key) }
	var tests []string // the keys that say what is tested
	test := func(op engine.CondOp, key string) {
		c.Op = op
		tests = append(tests, key)
	}
	subs := func(op engine.CondOp, key string) func(v *yaml.Node) {
		return func(v *yaml.Node) {
			test(op, key)
			d.List(v, f(key), true, func(_ int, item *yaml.Node, path string) {
				if s := decodeCond(d, item, path); s != nil {
					c.Sub = append(c.Sub, *s)
				}
			})
		}
	}
	fieldNode := (*yaml.Node)(nil)
	if !d.Mapping(n, field, nil, config.Keys{
		"field": func(v *yaml.Node) {
			fieldNode = v
			if s, ok := d.String(v, f("field")); ok {
				c.Field = s
				if err := engine.CheckField(s); err != nil {
					d.Errorf(v, f("field"), "%v", err)
				}
			}
		},
		"equals": func(v *yaml.Node) {
			test(engine.CondEquals, "equals")
			if s, ok := d.String(v, f("equals")); ok {
				c.Values = []string{s}
			}
		},
		"in": func(v *yaml.Node) {
			test(engine.CondIn, "in")
			if ss, ok := d.Strings(v, f("in")); ok {
				if len(ss) == 0 {
					d.Errorf(v, f("in"), "must not be empty")
				}
				c.Values = ss
			}
		},
		"exists": func(v *yaml.Node) {
			test(engine.CondExists, "exists")
			c.Exists, _ = d.Bool(v, f("exists"))
		},
		"in_cidr": func(v *yaml.Node) {
			test(engine.CondInCIDR, "in_cidr")
			ss, ok := d.Strings(v, f("in_cidr"))
			if !ok {
				return
			}
			if len(ss) == 0 {
				d.Errorf(v, f("in_cidr"), "must not be empty")
			}
			for _, s := range ss {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					d.Errorf(v, f("in_cidr"), "%q is not a network (want ADDRESS/BITS: 10.0.0.0/8, 2001:db8::/32)", s)
					continue
				}
				c.Prefixes = append(c.Prefixes, netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p)).Masked())
			}
		},
		"matched": func(v *yaml.Node) { test(engine.CondMatched, "matched"); c.Rule, _ = d.String(v, f("matched")) },
		"missed":  func(v *yaml.Node) { test(engine.CondMissed, "missed"); c.Rule, _ = d.String(v, f("missed")) },
		"all":     subs(engine.CondAll, "all"),
		"any":     subs(engine.CondAny, "any"),
	}) {
		return nil
	}
	switch {
	case len(tests) == 0:
		d.Errorf(n, field, "names no test: want field with equals, in, exists or in_cidr; matched or missed; all or any")
		return nil
	case len(tests) > 1:
		d.Errorf(n, field, "has %s: one test per condition (combine them with all or any)", strings.Join(tests, " and "))
		return nil
	}
	switch c.Op {
	case engine.CondEquals, engine.CondIn, engine.CondExists, engine.CondInCIDR:
		if fieldNode == nil {
			d.Errorf(n, field, "%s needs field: the event field tested", tests[0])
			return nil
		}
	default:
		if fieldNode != nil {
			d.Errorf(fieldNode, f("field"), "%s tests no field", tests[0])
			return nil
		}
	}
	return c
}

// unmapBits is what an IPv4-mapped IPv6 prefix loses when written as
// IPv4 (::ffff:10.0.0.0/104 is 10.0.0.0/8).
func unmapBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return 96
	}
	return 0
}
