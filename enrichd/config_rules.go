package enrichd

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lutkit/lutkit/internal/config"
)

// RuleConfig is one enrichment rule.
type RuleConfig struct {
	At     config.At
	Name   string
	Table  string
	Fields []string // one source field, or several for a composite key
	Target string   // dotted output path of the rule's object
	// Columns to keep (LUT): nil means every column, under its own name.
	// The At records where each was written as "columns[i]".
	Columns []Rename
	// MMDBFields: record path -> output name, in order.
	MMDBFields []Rename
	MMDB       bool // the rule reads an .mmdb table
	MissTag    string
	Defaults   []Rename // output name -> value on a miss
}

// Rename maps a source name (column or record path) to an output name.
type Rename struct{ From, To string }

func decodeRule(d *config.Decoder, n *yaml.Node, field string) RuleConfig {
	var r RuleConfig
	f := func(key string) string { return config.Field(field, key) }
	fields := func(key string) func(v *yaml.Node) {
		return func(v *yaml.Node) {
			// field and fields are one setting: its checks go to "field".
			r.At.Set("field", v)
			var ok bool
			if r.Fields, ok = d.Strings(v, f(key)); !ok {
				r.At.Fail("field")
			}
		}
	}
	d.Mapping(n, field, &r.At, config.Keys{
		"name":   func(v *yaml.Node) { r.Name, _ = d.String(v, f("name")) },
		"table":  func(v *yaml.Node) { r.Table, _ = d.String(v, f("table")) },
		"field":  fields("field"),
		"fields": fields("fields"),
		"target": func(v *yaml.Node) { r.Target, _ = d.String(v, f("target")) },
		"columns": func(v *yaml.Node) {
			if v.Kind == yaml.ScalarNode && v.Value == "all" {
				return
			}
			r.Columns = decodeRenames(d, v, f("columns"), &r.At, "columns")
		},
		"mmdb_fields": func(v *yaml.Node) {
			r.MMDB = true
			r.MMDBFields = decodeRenames(d, v, f("mmdb_fields"), &r.At, "mmdb_fields")
		},
		"on_miss": func(v *yaml.Node) {
			d.Mapping(v, f("on_miss"), nil, config.Keys{
				"tag":      func(v *yaml.Node) { r.MissTag, _ = d.String(v, f("on_miss.tag")) },
				"defaults": func(v *yaml.Node) { r.Defaults = decodeRenames(d, v, f("on_miss.defaults"), nil, "") },
			})
		},
	})
	return r
}

// decodeRenames reads a list of names (each kept as it is), a mapping from
// names to new names, or a list mixing names and mappings. at, when not
// nil, records where each entry was written as key[i].
func decodeRenames(d *config.Decoder, n *yaml.Node, field string, at *config.At, key string) []Rename {
	var out []Rename
	add := func(from, to string, p config.Pos) {
		if at != nil {
			at.SetPos(config.Index(key, len(out)), p)
		}
		out = append(out, Rename{from, to})
	}
	pairs := func(v *yaml.Node) {
		ps, _ := d.Pairs(v, field)
		for _, p := range ps {
			add(p.Key, p.Value, p.Pos)
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		pairs(n)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.Errorf(n, field, "must not be empty")
		}
		for i, c := range n.Content {
			if c.Kind == yaml.MappingNode {
				pairs(c)
				continue
			}
			if s, ok := d.String(c, config.Index(field, i)); ok {
				add(s, s, config.PosOf(c))
			}
		}
	default:
		d.Errorf(n, field, "must be a list of names or a mapping from name to output name")
	}
	return out
}

// Validate checks the rule; s is its scope.
func (r *RuleConfig) Validate(s config.Scope) {
	s.Require("table", r.Table != "", "")
	s.Require("field", len(r.Fields) > 0, "the source field (or fields, for a composite key)")
	if r.MMDB && s.Given("columns") {
		s.Errorf("columns", "a rule has either columns (.lut table) or mmdb_fields (.mmdb table)")
	}
	if r.MMDB && len(r.Fields) > 1 {
		s.Errorf("field", "an mmdb rule takes exactly one field (an IP address)")
	}
	for _, f := range r.Fields {
		if _, err := parseFieldRef(f); err != nil {
			s.Errorf("field", "%v", err)
		}
	}
	if r.Target != "" {
		s.Check("target", checkPath(r.Target))
	}
	for _, m := range r.MMDBFields {
		if err := checkPath(m.To); err != nil {
			s.Errorf("mmdb_fields", "%q: %v", m.To, err)
		}
	}
}

// checkPath checks a dotted output name.
func checkPath(s string) error {
	if s == "" {
		return fmt.Errorf("empty output name")
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return fmt.Errorf("%q has an empty segment", s)
		}
	}
	return nil
}

// checkRules checks what the rules make together: at most 64 of them, and
// an output object in which no two names collide.
func checkRules(cfg *Config) error {
	if len(cfg.Rules) > maxRules {
		return fmt.Errorf("at most %d rules are supported, got %d", maxRules, len(cfg.Rules))
	}
	_, err := buildTree(cfg)
	return err
}

// maxRules is how many rules a configuration may have (an event's misses
// are one bit per rule).
const maxRules = 64
