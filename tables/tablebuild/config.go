package tablebuild

import (
	"fmt"
	"github.com/lutkit/lutkit/compile/source"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/iptable"
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

// TableConfig declares one table.
type TableConfig struct {
	Name string      `json:"name"`
	Kind tables.Kind `json:"kind"`
	// Line is the line of the table's entry in the configuration file.
	Line int `json:"-"`
	// Sources in order. A .lut table has exactly one.
	Sources []SourceConfig `json:"sources"`
	// LUT holds the compile options of a .lut table (nil for .mmdb).
	LUT *LUTConfig `json:"lut,omitempty"`
	// MMDB holds the build options of an .mmdb table (nil for .lut).
	MMDB *MMDBConfig `json:"mmdb,omitempty"`
}

// LUTConfig are the options of "lut compile" for a .lut table.
type LUTConfig struct {
	Key         []string `json:"key"`
	Columns     []string `json:"columns,omitempty"`
	FoldCase    bool     `json:"fold_case,omitempty"`
	OnDuplicate string   `json:"on_duplicate,omitempty"`
	SkipBadRows bool     `json:"skip_bad_rows,omitempty"`
}

// MMDBConfig are the options of "lut compile --out X.mmdb".
type MMDBConfig struct {
	Profile         string      `json:"profile,omitempty"`
	DatabaseType    string      `json:"database_type,omitempty"`
	Description     string      `json:"description,omitempty"`
	Languages       []string    `json:"languages,omitempty"`
	IPVersion       int         `json:"ip_version,omitempty"`
	RecordSize      int         `json:"record_size,omitempty"`
	CustomKey       string      `json:"custom_key,omitempty"`
	DefaultLocation *[2]float64 `json:"default_location,omitempty"`
}

// SourceConfig is one source of a table. Path is as written in the file;
// Resolved is Path made relative to the configuration's directory.
type SourceConfig struct {
	Path     string `json:"path"`
	Resolved string `json:"-"`
	Line     int    `json:"-"`

	// .lut sources (see source.Options).
	Format      string   `json:"format,omitempty"`
	Delimiter   string   `json:"delimiter,omitempty"`
	Header      []string `json:"header,omitempty"`
	SQLiteTable string   `json:"sqlite_table,omitempty"`
	SQLiteQuery string   `json:"sqlite_query,omitempty"`

	// .mmdb sources (see iptable.Source).
	Type          string   `json:"type,omitempty"` // ranges, networks, list or mmdb
	Columns       []string `json:"columns,omitempty"`
	StartColumn   string   `json:"start_column,omitempty"`
	EndColumn     string   `json:"end_column,omitempty"`
	NetworkColumn string   `json:"network_column,omitempty"`
	Family        int      `json:"family,omitempty"`
	Fields        []string `json:"fields,omitempty"`
	Set           []string `json:"set,omitempty"`
	Merge         string   `json:"merge,omitempty"`
}

// ConfigError is one problem found in a tables.yaml. It names the file,
// the line and column, the table and the field at fault.
type ConfigError struct {
	File   string
	Line   int
	Column int
	Table  string // "" for file-level problems
	Field  string // "" when the whole entry is at fault
	Msg    string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Table != "" {
		fmt.Fprintf(&b, "table %q: ", e.Table)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors lists every problem of a configuration file.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

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
	p := &parser{file: path}
	cfg := &Config{Path: path, Dir: filepath.Dir(path)}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, ConfigErrors{{File: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, ConfigErrors{{File: path, Msg: "the file is empty (want a mapping with a \"tables\" list)"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errf(root, "", "", "the top level must be a mapping with a \"tables\" list")
		return nil, p.errs
	}
	var tablesNode *yaml.Node
	p.fields(root, "", map[string]func(k, v *yaml.Node){
		"version": func(k, v *yaml.Node) {
			if n, ok := p.int(v, "", "version"); ok && n != 1 {
				p.errf(v, "", "version", "unsupported version %d (want 1)", n)
			}
		},
		"tables": func(k, v *yaml.Node) { tablesNode = v },
	})
	if tablesNode == nil {
		if len(p.errs) == 0 {
			p.errf(root, "", "tables", "missing (want a list of tables)")
		}
		return nil, p.errs
	}
	if tablesNode.Kind != yaml.SequenceNode {
		p.errf(tablesNode, "", "tables", "must be a list of tables")
		return nil, p.errs
	}
	seen := map[string]int{}
	for i, tn := range tablesNode.Content {
		t, ok := p.table(cfg, tn, i)
		if t == nil {
			continue
		}
		if line, dup := seen[t.Name]; dup {
			p.errf(tn, t.Name, "name", "declared twice (first at line %d)", line)
			continue
		}
		seen[t.Name] = tn.Line
		if ok {
			cfg.Tables = append(cfg.Tables, *t)
		}
	}
	if len(tablesNode.Content) == 0 {
		p.errf(tablesNode, "", "tables", "the list is empty")
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return cfg, nil
}

type parser struct {
	file string
	errs ConfigErrors
}

func (p *parser) errf(n *yaml.Node, table, field, format string, args ...any) {
	e := &ConfigError{File: p.file, Table: table, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

// fields walks a mapping, calling the handler of each known key and
// reporting unknown and repeated keys.
func (p *parser) fields(m *yaml.Node, table string, handlers map[string]func(k, v *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errf(k, table, "", "a key must be a plain name")
			continue
		}
		if seen[k.Value] {
			p.errf(k, table, k.Value, "given twice")
			continue
		}
		seen[k.Value] = true
		h, ok := handlers[k.Value]
		if !ok {
			names := make([]string, 0, len(handlers))
			for n := range handlers {
				names = append(names, n)
			}
			sort.Strings(names)
			p.errf(k, table, k.Value, "unknown field (known: %s)", strings.Join(names, ", "))
			continue
		}
		h(k, v)
	}
}

func (p *parser) str(v *yaml.Node, table, field string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.errf(v, table, field, "must be a string")
		return "", false
	}
	return v.Value, true
}

func (p *parser) bool(v *yaml.Node, table, field string) (bool, bool) {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		p.errf(v, table, field, "must be true or false, not %q", v.Value)
		return false, false
	}
	return b, true
}

func (p *parser) int(v *yaml.Node, table, field string) (int, bool) {
	if v.Kind != yaml.ScalarNode {
		p.errf(v, table, field, "must be an integer")
		return 0, false
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		p.errf(v, table, field, "must be an integer, not %q", v.Value)
		return 0, false
	}
	return n, true
}

// strs accepts a string or a list of strings.
func (p *parser) strs(v *yaml.Node, table, field string) ([]string, bool) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			break
		}
		return []string{v.Value}, true
	case yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
				p.errf(c, table, field, "must be a list of strings")
				return nil, false
			}
			out = append(out, c.Value)
		}
		return out, true
	}
	p.errf(v, table, field, "must be a string or a list of strings")
	return nil, false
}

// table parses one table entry. It returns nil when the entry has no
// usable name, and ok false when it has errors.
func (p *parser) table(cfg *Config, n *yaml.Node, index int) (t *TableConfig, ok bool) {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "", fmt.Sprintf("tables[%d]", index), "must be a mapping with name, kind, sources and options")
		return nil, false
	}
	t = &TableConfig{Line: n.Line}
	// The name and kind come first: every other message names the table,
	// and which options are allowed depends on the kind.
	var kindNode, nameNode, sourcesNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "name":
			nameNode = n.Content[i+1]
		case "kind":
			kindNode = n.Content[i+1]
		case "sources":
			sourcesNode = n.Content[i+1]
		}
	}
	label := fmt.Sprintf("#%d", index+1)
	if nameNode == nil {
		p.errf(n, label, "name", "missing")
		return nil, false
	}
	name, valid := p.str(nameNode, label, "name")
	if !valid {
		return nil, false
	}
	if !tables.ValidName(name) {
		p.errf(nameNode, name, "name", "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit")
		return nil, false
	}
	t.Name = name
	t.Kind = tables.KindLUT
	if kindNode != nil {
		k, _ := p.str(kindNode, name, "kind")
		switch strings.TrimPrefix(strings.ToLower(k), ".") {
		case "lut":
			t.Kind = tables.KindLUT
		case "mmdb":
			t.Kind = tables.KindMMDB
		default:
			p.errf(kindNode, name, "kind", "unknown kind %q (want lut or mmdb)", k)
			return t, false
		}
	}
	nerr := len(p.errs)
	common := map[string]func(k, v *yaml.Node){
		"name":    func(k, v *yaml.Node) {},
		"kind":    func(k, v *yaml.Node) {},
		"sources": func(k, v *yaml.Node) {},
	}
	if t.Kind == tables.KindLUT {
		o := &LUTConfig{}
		t.LUT = o
		common["key"] = func(k, v *yaml.Node) { o.Key, _ = p.strs(v, name, "key") }
		common["columns"] = func(k, v *yaml.Node) { o.Columns, _ = p.strs(v, name, "columns") }
		common["fold_case"] = func(k, v *yaml.Node) { o.FoldCase, _ = p.bool(v, name, "fold_case") }
		common["skip_bad_rows"] = func(k, v *yaml.Node) { o.SkipBadRows, _ = p.bool(v, name, "skip_bad_rows") }
		common["on_duplicate"] = func(k, v *yaml.Node) {
			s, ok := p.str(v, name, "on_duplicate")
			switch {
			case !ok:
			case s == compile.DuplicateError || s == compile.DuplicateFirst || s == compile.DuplicateLast:
				o.OnDuplicate = s
			default:
				p.errf(v, name, "on_duplicate", "unknown policy %q (want error, first or last)", s)
			}
		}
		p.fields(n, name, common)
		if len(o.Key) == 0 {
			p.errf(n, name, "key", "missing: a .lut table needs its key column(s)")
		}
	} else {
		o := &MMDBConfig{}
		t.MMDB = o
		common["profile"] = func(k, v *yaml.Node) {
			if s, ok := p.str(v, name, "profile"); ok {
				if _, err := iptable.ParseProfile(s); err != nil {
					p.errf(v, name, "profile", "%v", err)
				}
				o.Profile = strings.ToLower(s)
			}
		}
		common["database_type"] = func(k, v *yaml.Node) { o.DatabaseType, _ = p.str(v, name, "database_type") }
		common["description"] = func(k, v *yaml.Node) { o.Description, _ = p.str(v, name, "description") }
		common["custom_key"] = func(k, v *yaml.Node) { o.CustomKey, _ = p.str(v, name, "custom_key") }
		common["languages"] = func(k, v *yaml.Node) { o.Languages, _ = p.strs(v, name, "languages") }
		common["ip_version"] = func(k, v *yaml.Node) {
			if n, ok := p.int(v, name, "ip_version"); ok {
				if n != 4 && n != 6 {
					p.errf(v, name, "ip_version", "must be 4 or 6, not %d", n)
				}
				o.IPVersion = n
			}
		}
		common["record_size"] = func(k, v *yaml.Node) {
			if n, ok := p.int(v, name, "record_size"); ok {
				if n != 24 && n != 28 && n != 32 {
					p.errf(v, name, "record_size", "must be 24, 28 or 32, not %d", n)
				}
				o.RecordSize = n
			}
		}
		common["default_location"] = func(k, v *yaml.Node) {
			var ll []float64
			if v.Kind != yaml.SequenceNode || v.Decode(&ll) != nil || len(ll) != 2 {
				p.errf(v, name, "default_location", "must be [latitude, longitude]")
				return
			}
			o.DefaultLocation = &[2]float64{ll[0], ll[1]}
		}
		p.fields(n, name, common)
	}
	if sourcesNode == nil {
		p.errf(n, name, "sources", "missing: list the table's source files")
	} else {
		p.sources(cfg, t, sourcesNode)
	}
	return t, len(p.errs) == nerr
}

func (p *parser) sources(cfg *Config, t *TableConfig, n *yaml.Node) {
	name := t.Name
	var items []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		items = []*yaml.Node{n}
	case yaml.SequenceNode:
		items = n.Content
	default:
		p.errf(n, name, "sources", "must be a file name or a list of sources")
		return
	}
	if len(items) == 0 {
		p.errf(n, name, "sources", "the list is empty")
		return
	}
	if t.Kind == tables.KindLUT && len(items) != 1 {
		p.errf(n, name, "sources", "a .lut table has exactly one source, not %d", len(items))
		return
	}
	for i, it := range items {
		field := fmt.Sprintf("sources[%d]", i)
		s := SourceConfig{Line: it.Line}
		switch it.Kind {
		case yaml.ScalarNode:
			s.Path, _ = p.str(it, name, field)
		case yaml.MappingNode:
			h := map[string]func(k, v *yaml.Node){
				"path": func(k, v *yaml.Node) { s.Path, _ = p.str(v, name, field+".path") },
			}
			str := func(key string, dst *string) {
				h[key] = func(k, v *yaml.Node) { *dst, _ = p.str(v, name, field+"."+key) }
			}
			strs := func(key string, dst *[]string) {
				h[key] = func(k, v *yaml.Node) { *dst, _ = p.strs(v, name, field+"."+key) }
			}
			str("delimiter", &s.Delimiter)
			if t.Kind == tables.KindLUT {
				str("format", &s.Format)
				strs("header", &s.Header)
				str("sqlite_table", &s.SQLiteTable)
				str("sqlite_query", &s.SQLiteQuery)
			} else {
				str("type", &s.Type)
				strs("columns", &s.Columns)
				str("start_column", &s.StartColumn)
				str("end_column", &s.EndColumn)
				str("network_column", &s.NetworkColumn)
				strs("fields", &s.Fields)
				strs("set", &s.Set)
				str("merge", &s.Merge)
				h["family"] = func(k, v *yaml.Node) {
					if n, ok := p.int(v, name, field+".family"); ok {
						if n != 0 && n != 4 && n != 6 {
							p.errf(v, name, field+".family", "must be 4 or 6, not %d", n)
						}
						s.Family = n
					}
				}
			}
			p.fields(it, name, h)
		default:
			p.errf(it, name, field, "must be a file name or a mapping with a path")
			continue
		}
		if s.Path == "" {
			p.errf(it, name, field+".path", "missing")
			continue
		}
		if filepath.IsAbs(s.Path) {
			s.Resolved = s.Path
		} else {
			s.Resolved = filepath.Join(cfg.Dir, s.Path)
		}
		p.checkSource(t, &s, it, field)
		t.Sources = append(t.Sources, s)
	}
}

// checkSource validates a source's options against its table's kind.
func (p *parser) checkSource(t *TableConfig, s *SourceConfig, n *yaml.Node, field string) {
	name := t.Name
	if s.Delimiter != "" {
		if _, err := source.ParseDelimiter(s.Delimiter); err != nil {
			p.errf(n, name, field+".delimiter", "%v", err)
		}
	}
	if t.Kind == tables.KindLUT {
		switch strings.ToLower(s.Format) {
		case "", "csv", "tsv", "sqlite", "parquet", "arrow":
		default:
			p.errf(n, name, field+".format", "unknown format %q (want csv, tsv, sqlite, parquet or arrow)", s.Format)
		}
		if s.SQLiteTable != "" && s.SQLiteQuery != "" {
			p.errf(n, name, field, "give sqlite_table or sqlite_query, not both")
		}
		return
	}
	typ := strings.ToLower(s.Type)
	if typ == "" {
		typ = guessIPSourceType(s)
		s.Type = typ
	}
	switch typ {
	case "ranges":
		if s.StartColumn == "" || s.EndColumn == "" {
			p.errf(n, name, field, "a ranges source needs start_column and end_column")
		}
	case "networks":
		if s.NetworkColumn == "" {
			p.errf(n, name, field+".network_column", "missing: a networks source needs the CIDR column")
		}
	case "list", "mmdb":
	default:
		p.errf(n, name, field+".type", "unknown source type %q (want ranges, networks, list or mmdb)", s.Type)
	}
	for _, f := range s.Fields {
		if _, err := iptable.ParseField(f); err != nil {
			p.errf(n, name, field+".fields", "%v", err)
		}
	}
	for _, c := range s.Set {
		if _, err := iptable.ParseConstant(c); err != nil {
			p.errf(n, name, field+".set", "%v", err)
		}
	}
	if s.Merge != "" {
		if _, err := iptable.ParseMerge(s.Merge); err != nil {
			p.errf(n, name, field+".merge", "%v", err)
		}
	}
}

// guessIPSourceType picks a source type from the columns given or the
// file name.
func guessIPSourceType(s *SourceConfig) string {
	switch {
	case s.StartColumn != "" || s.EndColumn != "":
		return "ranges"
	case s.NetworkColumn != "":
		return "networks"
	case strings.HasSuffix(strings.ToLower(s.Path), ".mmdb"):
		return "mmdb"
	}
	return "list"
}

// ipSources converts the sources of an .mmdb table for the iptable
// compiler.
func ipSources(t *TableConfig) ([]iptable.Source, error) {
	out := make([]iptable.Source, 0, len(t.Sources))
	for _, s := range t.Sources {
		src := iptable.Source{
			Path: s.Resolved, Columns: s.Columns,
			StartColumn: s.StartColumn, EndColumn: s.EndColumn,
			NetworkColumn: s.NetworkColumn, Family: s.Family,
		}
		switch s.Type {
		case "ranges":
			src.Kind = iptable.CSVRanges
		case "networks":
			src.Kind = iptable.CSVNetworks
		case "list":
			src.Kind = iptable.List
		case "mmdb":
			src.Kind = iptable.Base
		default:
			return nil, fmt.Errorf("source %s: unknown type %q", s.Path, s.Type)
		}
		d, err := source.ParseDelimiter(s.Delimiter)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Path, err)
		}
		src.Delimiter = d
		for _, f := range s.Fields {
			fd, err := iptable.ParseField(f)
			if err != nil {
				return nil, fmt.Errorf("source %s: %w", s.Path, err)
			}
			src.Fields = append(src.Fields, fd)
		}
		for _, c := range s.Set {
			cs, err := iptable.ParseConstant(c)
			if err != nil {
				return nil, fmt.Errorf("source %s: %w", s.Path, err)
			}
			src.Set = append(src.Set, cs)
		}
		if s.Merge != "" {
			m, err := iptable.ParseMerge(s.Merge)
			if err != nil {
				return nil, fmt.Errorf("source %s: %w", s.Path, err)
			}
			src.Merge = m
		}
		out = append(out, src)
	}
	return out, nil
}
