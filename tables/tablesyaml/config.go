package tablesyaml

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/iptable"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/tables"
)

// Config is a parsed and validated tables.yaml.
type Config struct {
	// Path is the file the configuration was read from.
	Path string
	// Dir is the directory relative source paths are resolved against
	// (the directory of Path).
	Dir string
	// Tables are the declared tables, in file order.
	Tables []TableConfig
}

// TableConfig declares one table. Its options are the compilers' own
// specs, decoded from the table's entry: the keys of tables.yaml are their
// json names.
type TableConfig struct {
	Name string      `json:"name"`
	Kind tables.Kind `json:"kind"`
	// Line is the line of the table's entry in the configuration file.
	Line int `json:"-"`
	// Sources in order. A .lut table has exactly one.
	Sources []SourceConfig `json:"sources"`
	// LUT holds the compile options of a .lut table (nil for .mmdb).
	LUT *compile.Options `json:"lut,omitempty"`
	// MMDB holds the build options of an .mmdb table (nil for .lut).
	MMDB *iptable.Options `json:"mmdb,omitempty"`
	// Delta publishes each rebuilt version of this .lut table also as a
	// delta from its previous version (as Options.Delta does for every
	// table); DeltaChain, when above 0, bounds its chain instead of
	// Options.DeltaChain.
	Delta      bool `json:"delta,omitempty"`
	DeltaChain int  `json:"delta_chain,omitempty"`
}

// SourceConfig is one source of a table. Path is as written in the file;
// Resolved is Path made relative to the configuration's directory.
type SourceConfig struct {
	Path     string `json:"path"`
	Resolved string `json:"-"`
	Line     int    `json:"-"`
	// LUT holds the options of a .lut table's source (nil for .mmdb).
	LUT *source.Options `json:"lut,omitempty"`
	// MMDB is the source of an .mmdb table, its Path as written (nil for
	// .lut).
	MMDB *iptable.Source `json:"mmdb,omitempty"`
}

// IsDatabase reports whether s is a database query (PostgreSQL or MySQL),
// which a build runs again every time.
func (s *SourceConfig) IsDatabase() bool { return s.LUT != nil && s.LUT.Database() != "" }

// ReadsDatabase reports whether one of the table's sources is a database.
func (t *TableConfig) ReadsDatabase() bool {
	for i := range t.Sources {
		if t.Sources[i].IsDatabase() {
			return true
		}
	}
	return false
}

// ConfigError is one problem found in a tables.yaml: it names the file,
// the line and column, the table (`table "geo"`) and the field at fault.
type ConfigError = config.Error

// ConfigErrors lists every problem of a configuration file.
type ConfigErrors = config.Errors

// LoadConfig reads and validates a tables.yaml file. On validation
// failure the error is a ConfigErrors listing every problem found.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(path, b)
}

// ParseConfig parses and validates a tables.yaml held in memory; path
// names it in errors and anchors relative source paths.
func ParseConfig(path string, data []byte) (*Config, error) {
	d := &config.Decoder{File: path}
	root := d.Document(data, `a mapping with a "tables" list`)
	if root == nil {
		return nil, d.Errs
	}
	cfg := &Config{Path: path, Dir: filepath.Dir(path)}
	var tablesNode *yaml.Node
	d.Mapping(root, "", nil, config.Keys{
		"version": func(v *yaml.Node) {
			if n, ok := d.Int(v, "version"); ok && n != 1 {
				d.Errorf(v, "version", "unsupported version %d (want 1)", n)
			}
		},
		"tables": func(v *yaml.Node) { tablesNode = v },
	})
	if tablesNode == nil {
		if len(d.Errs) == 0 {
			d.Errorf(root, "tables", "missing (want a list of tables)")
		}
		return nil, d.Errs
	}
	var decls []*tableDecl
	seen := map[string]int{}
	d.List(tablesNode, "tables", true, func(i int, tn *yaml.Node, field string) {
		decl := decodeTable(d, cfg, tn, i, field)
		if decl == nil {
			return
		}
		if line, dup := seen[decl.t.Name]; dup {
			d.Errorf(tn, "name", "declared twice (first at line %d)", line)
			return
		}
		seen[decl.t.Name] = tn.Line
		if !decl.noKind {
			decls = append(decls, decl)
		}
	})
	d.Scope = ""
	// Every spec checks itself; its errors are placed where its keys were
	// written, and name the table.
	v := &config.Validator{File: path, Errs: d.Errs}
	for _, decl := range decls {
		before := len(v.Errs)
		decl.check(v)
		for _, e := range v.Errs[before:] {
			e.Scope = decl.scope
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	for _, decl := range decls {
		cfg.Tables = append(cfg.Tables, *decl.t)
	}
	return cfg, nil
}

// tableDecl is a table as decoded, with where its keys were written.
type tableDecl struct {
	t     *TableConfig
	scope string       // `table "name"`, for its errors
	at    config.At    // the table's keys
	srcAt []*config.At // each source's keys
	// srcField is each source's path in errors (sources[i], i counting
	// the entries of the file).
	srcField []string
	// noKind is set when the kind is unknown: the name counts, nothing
	// else is read.
	noKind bool
}

// check runs the Check of every spec of the table.
func (decl *tableDecl) check(v *config.Validator) {
	t, s := decl.t, v.In(&decl.at, "")
	if t.LUT != nil {
		t.LUT.Check(s)
	} else {
		t.MMDB.Check(s)
	}
	for i, src := range t.Sources {
		ss := v.In(decl.srcAt[i], decl.srcField[i])
		if src.LUT != nil {
			src.LUT.Check(ss)
			src.LUT.CheckFormat(src.Path, ss)
		} else {
			src.MMDB.Check(ss)
		}
	}
}

// decodeTable decodes one table entry. It returns nil when the entry has
// no usable name or kind (its errors are reported).
func decodeTable(d *config.Decoder, cfg *Config, n *yaml.Node, index int, field string) *tableDecl {
	d.Scope = ""
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, field, "must be a mapping with name, kind, sources and options")
		return nil
	}
	// The name and kind come first: every other message names the table,
	// and which options are allowed depends on the kind.
	nameNode, kindNode, sourcesNode := config.Lookup(n, "name"), config.Lookup(n, "kind"), config.Lookup(n, "sources")
	d.Scope = fmt.Sprintf("table %q", fmt.Sprintf("#%d", index+1))
	if nameNode == nil {
		d.Errorf(n, "name", "missing")
		return nil
	}
	name, ok := d.String(nameNode, "name")
	if !ok {
		return nil
	}
	d.Scope = fmt.Sprintf("table %q", name)
	if !tables.ValidName(name) {
		d.Errorf(nameNode, "name", "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit")
		return nil
	}
	decl := &tableDecl{t: &TableConfig{Name: name, Kind: tables.KindLUT, Line: n.Line}, scope: d.Scope}
	t := decl.t
	if kindNode != nil {
		k, _ := d.String(kindNode, "kind")
		switch strings.TrimPrefix(strings.ToLower(k), ".") {
		case "lut":
		case "mmdb":
			t.Kind = tables.KindMMDB
		default:
			if k != "" {
				d.Errorf(kindNode, "kind", "unknown kind %q (want lut or mmdb)", k)
			}
			decl.noKind = true
			return decl
		}
	}
	var keys config.Keys
	if t.Kind == tables.KindLUT {
		t.LUT = &compile.Options{}
		keys = specKeys(d, "", t.LUT)
	} else {
		t.MMDB = &iptable.Options{}
		keys = specKeys(d, "", t.MMDB)
	}
	for _, k := range []string{"name", "kind", "sources"} {
		keys[k] = func(*yaml.Node) {}
	}
	deltaKey := func(v *yaml.Node, key string) bool {
		if t.Kind != tables.KindLUT {
			d.Errorf(v, key, "deltas are for .lut tables (an .mmdb table is published whole)")
			return false
		}
		return true
	}
	keys["delta"] = func(v *yaml.Node) {
		if deltaKey(v, "delta") {
			t.Delta, _ = d.Bool(v, "delta")
		}
	}
	keys["delta_chain"] = func(v *yaml.Node) {
		if !deltaKey(v, "delta_chain") {
			return
		}
		if n, ok := d.Int(v, "delta_chain"); ok && n < 1 {
			d.Errorf(v, "delta_chain", "must be at least 1 (consecutive versions with a delta), not %d", n)
		} else {
			t.DeltaChain = n
		}
	}
	d.Mapping(n, "", &decl.at, keys)
	if sourcesNode == nil {
		d.Errorf(n, "sources", "missing: list the table's source files")
	} else {
		decodeSources(d, cfg, decl, sourcesNode)
	}
	return decl
}

// decodeSources decodes a table's sources: a file name, or a list of file
// names and mappings with a path and the source's options.
func decodeSources(d *config.Decoder, cfg *Config, decl *tableDecl, n *yaml.Node) {
	t := decl.t
	var items []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		items = []*yaml.Node{n}
	case yaml.SequenceNode:
		items = n.Content
	default:
		d.Errorf(n, "sources", "must be a file name or a list of sources")
		return
	}
	if len(items) == 0 {
		d.Errorf(n, "sources", "the list is empty")
		return
	}
	if t.Kind == tables.KindLUT && len(items) != 1 {
		d.Errorf(n, "sources", "a .lut table has exactly one source, not %d", len(items))
		return
	}
	for i, it := range items {
		field := config.Index("sources", i)
		s := SourceConfig{Line: it.Line}
		at := &config.At{}
		var keys config.Keys
		if t.Kind == tables.KindLUT {
			s.LUT = &source.Options{}
			keys = specKeys(d, field, s.LUT)
			keys["path"] = func(v *yaml.Node) { s.Path, _ = d.String(v, config.Field(field, "path")) }
		} else {
			s.MMDB = &iptable.Source{}
			keys = specKeys(d, field, s.MMDB)
		}
		switch it.Kind {
		case yaml.ScalarNode:
			at.SetNode(it)
			var ok bool
			if s.Path, ok = d.String(it, field); !ok {
				continue
			}
			if s.MMDB != nil {
				s.MMDB.Path = s.Path
			}
		case yaml.MappingNode:
			d.Mapping(it, field, at, keys)
			if s.MMDB != nil {
				s.Path = s.MMDB.Path
			}
		default:
			d.Errorf(it, field, "must be a file name or a mapping with a path")
			continue
		}
		if s.IsDatabase() {
			if s.Path != "" {
				d.Errorf(it, config.Field(field, "path"), "a %s source reads no file", s.LUT.Database())
			}
			t.Sources = append(t.Sources, s)
			decl.srcAt = append(decl.srcAt, at)
			decl.srcField = append(decl.srcField, field)
			continue
		}
		if s.Path == "" {
			if !at.Failed("path") {
				d.Errorf(it, config.Field(field, "path"), "missing")
			}
			continue
		}
		if s.MMDB != nil && !at.Given("type") {
			s.MMDB.Kind = s.MMDB.GuessKind()
		}
		if filepath.IsAbs(s.Path) {
			s.Resolved = s.Path
		} else {
			s.Resolved = filepath.Join(cfg.Dir, s.Path)
		}
		t.Sources = append(t.Sources, s)
		decl.srcAt = append(decl.srcAt, at)
		decl.srcField = append(decl.srcField, field)
	}
}
