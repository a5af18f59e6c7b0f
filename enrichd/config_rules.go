package enrichd

import (
	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/internal/config"
)

// RuleConfig is one enrichment rule (see engine.Rule). Its At records
// where each entry of Columns was written as "columns[i]".
type RuleConfig struct {
	At config.At
	engine.Rule
}

// Rename maps a source name (column or record path) to an output name.
type Rename = engine.Rename

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
	if config.Lookup(n, "field") != nil && config.Lookup(n, "fields") != nil {
		d.Errorf(n, field, "give field or fields, not both")
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
		"when": func(v *yaml.Node) { r.When = decodeCond(d, v, f("when")) },
		"each": func(v *yaml.Node) { r.Each, _ = d.Bool(v, f("each")) },
		"at":   func(v *yaml.Node) { r.Rule.At, _ = d.String(v, f("at")) },
		"max_matches": func(v *yaml.Node) {
			if r.MaxMatches, _ = d.Int(v, f("max_matches")); r.MaxMatches == 0 {
				r.MaxMatches = -1 // 0 is "not given"; CheckMaxMatches refuses it
			}
		},
		"on_miss": func(v *yaml.Node) {
			d.Mapping(v, f("on_miss"), nil, config.Keys{
				"tag": func(v *yaml.Node) { r.MissTag, _ = d.String(v, f("on_miss.tag")) },
				"defaults": func(v *yaml.Node) {
					if v.Kind != yaml.MappingNode {
						d.Errorf(v, f("on_miss.defaults"), "must be a mapping from output name to the value written on a miss")
						return
					}
					r.Defaults = decodeRenames(d, v, f("on_miss.defaults"), nil, "")
				},
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
		out = append(out, Rename{From: from, To: to})
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
		s.Check("field", engine.CheckField(f))
	}
	if r.Target != "" {
		s.Check("target", engine.CheckOutputName(r.Target))
	}
	s.Check("at", engine.CheckEventTime(r.Rule.At))
	s.Check("max_matches", engine.CheckMaxMatches(&r.Rule))
	for _, m := range r.MMDBFields {
		if err := engine.CheckOutputName(m.To); err != nil {
			s.Errorf("mmdb_fields", "%q: %v", m.To, err)
		}
	}
	for j, c := range r.Columns {
		if err := engine.CheckOutputName(c.To); err != nil {
			s.Errorf(config.Index("columns", j), "%q: %v", c.To, err)
		}
	}
}

// rules returns the engine's rules and options of the configuration.
func (cfg *Config) engineRules() ([]engine.Rule, engine.Options) {
	rules := make([]engine.Rule, len(cfg.Rules))
	for i, r := range cfg.Rules {
		rules[i] = r.Rule
	}
	opts := engine.Options{Original: cfg.Pipeline.Original, StructuredData: cfg.Pipeline.StructuredData, TLSClient: cfg.Pipeline.TLSClient,
		EventTime: cfg.Pipeline.EventTime}
	switch cfg.Pipeline.KVFields {
	case KVAll:
		opts.KV = engine.KVAll
	case KVNone:
		opts.KV = engine.KVNone
	}
	for _, o := range cfg.Outputs {
		if ef, ok := o.Settings.(EventFielder); ok {
			// The output sends events one by one.
			opts.Split = true
			opts.EventFields = append(opts.EventFields, ef.EventFields()...)
		}
	}
	return rules, opts
}
