package document

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/compile/source"
)

// yamlReader reads a YAML document: a dictionary (a mapping) or a
// sequence of mappings.
//
// YAML does not stream as JSON does: a value's meaning can depend on what
// follows it (anchors, flow collections), and the parser
// (go.yaml.in/yaml/v3) builds the whole document's node tree before it
// returns. The reader therefore holds the tree for as long as it is open:
// memory grows with the document, about 30 times its size (a 16 MiB
// dictionary of 200,000 five-field rows compiled in 475 MiB RSS, see
// BENCHMARKS.md), so a big table is better compiled from JSON or NDJSON.
type yamlReader struct {
	name   string
	nested string
	rows   []*yaml.Node // for a dictionary, key and value nodes in turn
	dict   bool
	i      int
	b      *rowBuilder
	text   textEncoder
	line   int64
	rowAt  int64 // where the row last returned starts (nodePlace), for ValuePos
	err    error
	budget int // nodes the walk may still visit, aliases expanded
}

func openYAML(path string, opts source.Options) (_ source.Reader, err error) {
	// The parser reads the whole document before it returns anyway; held
	// here, it places the parser's errors.
	f, err := source.OpenText(path)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if off, fault := badYAMLText(data); off >= 0 {
		nl := bytes.LastIndexByte(data[:off], '\n')
		return nil, finalAt(path, bytes.Count(data[:off], []byte{'\n'})+1, off-nl, fault)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the document is empty", path)
		}
		return nil, yamlError(path, data, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlError(path, data, err)
		}
		return nil, finalAt(path, next.Line, next.Column, errors.New("a second document; a YAML source holds one"))
	}
	r := &yamlReader{name: path, nested: opts.Nested}
	if r.nested == "" {
		r.nested = source.NestedFlatten
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	switch root.Kind {
	case yaml.MappingNode:
		r.dict = true
	case yaml.SequenceNode:
	default:
		return nil, finalAt(path, root.Line, root.Column, fmt.Errorf("the document is %s; want a mapping (a dictionary) or a sequence of mappings", nodeKind(root)))
	}
	r.rows = root.Content
	// Aliases may repeat a node many times over; the walk stops at 16
	// visits a node of the document (and at least 65536).
	limit := max(16*countNodes(root, 0), 1<<16)
	if len(opts.Header) > 0 {
		if err := source.CheckColumnNames(opts.Header); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.b = newRowBuilder(opts.Header, false)
	} else {
		r.b = newRowBuilder(nil, true)
		r.budget = limit
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil && !source.Skippable(err) {
				return nil, err
			}
		}
		if len(r.b.columns) == 0 {
			return nil, fmt.Errorf("%s: the document has no rows to take the columns from (give them as a header)", path)
		}
		r.b = newRowBuilder(r.b.columns, false)
		r.i, r.err, r.line = 0, nil, 0
	}
	r.budget = limit
	return r, nil
}

// badYAMLText returns the offset of the first byte of data that YAML text
// cannot hold, and why: a byte that is not UTF-8, or a control character
// (YAML 1.2's c-printable: tab, LF, CR, NEL and the printable characters).
// The YAML library refuses them too, but names no line. It returns -1
// for a document in UTF-16, which the library reads.
func badYAMLText(data []byte) (int, error) {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return -1, nil
	}
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return i, fmt.Errorf("control character %U, which YAML does not allow", c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i, errors.New("invalid UTF-8")
		case r == 0x85, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000:
		default:
			return i, fmt.Errorf("control character %U, which YAML does not allow", r)
		}
		i += size
	}
	return -1, nil
}

// countNodes counts the nodes of the tree under n, not following aliases.
func countNodes(n *yaml.Node, depth int) int {
	c := 1
	if depth < maxDepth {
		for _, k := range n.Content {
			c += countNodes(k, depth+1)
		}
	}
	return c
}

// yamlSyntax matches a syntax error of the YAML library: its scanner's
// and its parser's errors, which name the line where the fault (or the
// construct it is in) starts, or no line for the first line.
var yamlSyntax = regexp.MustCompile(`^yaml: (?:line (\d+): )?((?:found|did not find|could not find|mapping (?:keys|values) are not allowed|block sequence entries are not allowed) .*)$`)

// parserProblems are the errors of the YAML library's parser, as opposed
// to its scanner's. It counts their lines from 0 (go.yaml.in/yaml/v3
// v3.0.5, parser.fail: "line 3" is the fourth line), and the scanner's
// from 1.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// unknownAnchor matches the YAML library's error for an alias of no
// anchor, which names no line.
var unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// findAlias returns the line and byte column of the first alias *name
// in data: one after a space, a flow indicator or the start of a line,
// and before a space, a flow indicator or the end of a line.
func findAlias(data []byte, name string) (line, col int, ok bool) {
	alias := "*" + name
	for from := 0; ; {
		i := bytes.Index(data[from:], []byte(alias))
		if i < 0 {
			return 0, 0, false
		}
		i += from
		end := i + len(alias)
		before := i == 0 || strings.IndexByte(" \t\n[{,", data[i-1]) >= 0
		after := end == len(data) || strings.IndexByte(" \t\r\n]},", data[end]) >= 0
		if before && after {
			nl := bytes.LastIndexByte(data[:i], '\n')
			return bytes.Count(data[:i], []byte{'\n'}) + 1, i - nl, true
		}
		from = i + 1
	}
}

// yamlError places an error of the YAML library in the document data: a
// syntax error is a final *source.RowError at its line (the library
// gives no column). The end of the input is on the last line, as an
// editor shows it: the library puts it on a line of its own after a last
// line without a newline.
func yamlError(path string, data []byte, err error) error {
	m := yamlSyntax.FindStringSubmatch(err.Error())
	if m == nil {
		if m := unknownAnchor.FindStringSubmatch(err.Error()); m != nil {
			if line, col, ok := findAlias(data, m[1]); ok {
				return finalAt(path, line, col, errors.New(strings.TrimPrefix(err.Error(), "yaml: ")))
			}
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	line := 1 // no line named: the first
	if m[1] != "" {
		line, _ = strconv.Atoi(m[1])
		if parserProblems[m[2]] {
			line++
		}
	}
	last := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		last++
	}
	return finalAt(path, max(min(line, last), 1), 0, errors.New(m[2]))
}

// finalAt is err at line and column (0: none) of the document, which
// cannot be read past it: a final *source.RowError.
func finalAt(path string, line, col int, err error) error {
	return &source.RowError{File: path, Line: int64(line), Column: col, Err: err, Final: true}
}

// errorAt is finalAt for the reader, whose Line then names the line.
func (r *yamlReader) errorAt(line, col int, err error) error {
	r.line = int64(line)
	return finalAt(r.name, line, col, err)
}

func (r *yamlReader) Columns() []string { return r.b.columns }

func (r *yamlReader) Line() int64 { return r.line }

var _ source.ValuePositioner = (*yamlReader)(nil)

// ValuePos places field i of the last row (source.ValuePositioner): where
// its value's node starts (an alias, not what it names), or a
// dictionary's entry its key.
func (r *yamlReader) ValuePos(i int) (line int64, column int) {
	at := r.b.at(i, r.rowAt)
	return at >> 32, int(at & (1<<32 - 1))
}

// nodePlace is where node n starts, its line and column in one int64: the
// builder's offset of a value.
func nodePlace(n *yaml.Node) int64 { return int64(n.Line)<<32 | int64(n.Column) }

func (r *yamlReader) Close() error {
	r.rows = nil
	if r.err == nil {
		r.err = errors.New("source: reader closed")
	}
	return nil
}

func (r *yamlReader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	step := 1
	if r.dict {
		step = 2
	}
	if r.i+step > len(r.rows) {
		r.err = io.EOF
		return nil, r.err
	}
	row := r.rows[r.i : r.i+step]
	r.i += step
	r.b.begin()
	r.line, r.rowAt = int64(row[0].Line), nodePlace(row[0])
	var err error
	if r.dict {
		key := r.resolve(row[0])
		if key == nil || key.Kind != yaml.ScalarNode {
			r.fail(row[0], "a dictionary key must be a scalar")
		} else {
			r.b.set(KeyColumn, []byte(key.Value), r.rowAt)
		}
		if v := r.resolve(row[1]); v != nil && v.Kind == yaml.MappingNode {
			err = r.mapping("", v, 1)
		} else {
			err = r.value(ValueColumn, row[1], 1)
		}
	} else {
		if v := r.resolve(row[0]); v != nil && v.Kind == yaml.MappingNode {
			err = r.mapping("", v, 1)
		} else {
			r.fail(row[0], "the row is %s, not a mapping", nodeKind(row[0]))
		}
	}
	if err != nil {
		r.err = err
		return nil, err
	}
	if r.b.err != nil {
		if r.b.errOff == 0 {
			r.b.errOff = r.rowAt
		}
		pos := r.b.errOff
		r.line = pos >> 32
		err := &source.RowError{File: r.name, Line: r.line, Column: int(pos & (1<<32 - 1)), Err: r.b.err}
		if errors.Is(r.b.err, errTooManyColumns) {
			// The document is not a table, and reading ends.
			err.Final = true
			r.err = err
		}
		return nil, err
	}
	return r.b.finish(), nil
}

// fail records the row's error at node n (its line and column packed in
// the builder's offset).
func (r *yamlReader) fail(n *yaml.Node, format string, args ...any) {
	r.b.fail(nodePlace(n), format, args...)
}

// resolve follows aliases, counting the visit against the budget; nil
// means the budget is spent (an error is then recorded by the caller's
// walk).
func (r *yamlReader) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	r.budget--
	if r.budget < 0 {
		return nil
	}
	return n
}

var errBudget = errors.New("aliases expand the document more than 16 times over")

// mapping reads the entries of mapping n, each to the column named by
// its path under prefix.
func (r *yamlReader) mapping(prefix string, n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return r.errorAt(n.Line, n.Column, errTooDeep)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := r.resolve(n.Content[i])
		if k == nil {
			return r.errorAt(n.Line, n.Column, errBudget)
		}
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			r.fail(n.Content[i], "a field name must be a scalar (merge keys are not supported)")
			continue
		}
		if err := r.value(join(prefix, k.Value), n.Content[i+1], depth); err != nil {
			return err
		}
	}
	return nil
}

// value reads node n into column name.
func (r *yamlReader) value(name string, n *yaml.Node, depth int) error {
	at := n
	if n = r.resolve(n); n == nil {
		return r.errorAt(at.Line, at.Column, errBudget)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			r.b.set(name, nil, nodePlace(at))
		} else {
			r.b.set(name, []byte(n.Value), nodePlace(at))
		}
	case yaml.MappingNode:
		if r.nested == source.NestedFlatten {
			return r.mapping(name, n, depth+1)
		}
		fallthrough
	default:
		r.text.reset()
		if err := r.encode(n, 0); err != nil {
			return r.errorAt(at.Line, at.Column, err)
		}
		r.b.set(name, r.text.buf, nodePlace(at))
	}
	return nil
}

// encode writes node n as JSON text.
func (r *yamlReader) encode(n *yaml.Node, depth int) error {
	e := &r.text
	if n = r.resolve(n); n == nil {
		return errBudget
	}
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		c := byte('[')
		if n.Kind == yaml.MappingNode {
			c = '{'
		}
		if err := e.open(c); err != nil {
			return err
		}
		for i, k := range n.Content {
			if c == '{' && i%2 == 0 {
				k = r.resolve(k)
				if k == nil {
					return errBudget
				}
				e.str(k.Value)
				continue
			}
			if err := r.encode(k, depth+1); err != nil {
				return err
			}
		}
		e.close()
	case yaml.ScalarNode:
		e.scalar(n)
	default:
		e.literal("null")
	}
	return nil
}

// jsonNumber matches a JSON number.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// scalar writes a YAML scalar as the JSON value of its type: a number as
// written when that is a JSON number (else as YAML reads it), true,
// false, null, or else a string.
func (e *textEncoder) scalar(n *yaml.Node) {
	switch n.Tag {
	case "!!null":
		e.literal("null")
		return
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			e.literal(strconv.FormatBool(b))
			return
		}
	case "!!int", "!!float":
		if jsonNumber.MatchString(n.Value) {
			e.literal(n.Value)
			return
		}
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			if n.Tag == "!!int" {
				var i int64
				if n.Decode(&i) == nil {
					e.literal(strconv.FormatInt(i, 10))
					return
				}
			}
			e.literal(strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
	}
	e.str(n.Value)
}

// nodeKind names the kind of node n.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return "a scalar"
	}
	return "empty"
}
