package config

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Decoder walks the YAML nodes of one configuration file and collects
// every problem it finds in Errs. Its methods never stop at the first
// error: a value that fails is reported and left at its zero value.
type Decoder struct {
	File string
	// Scope, when set, is written before the field of each error (for
	// example `table "geo"` while a table's entry is read).
	Scope string
	// Env, when set, looks up the environment variables that values
	// reference as ${VAR} or ${VAR:-default} (os.LookupEnv); $$ is then a
	// single $. Without it values are taken as written.
	Env  func(name string) (string, bool)
	Errs Errors
	// OnKeys, when set, is called by Mapping with the field path of each
	// mapping it walks and the keys it knows there: what a configuration
	// reference lists (see enrichd's config_ref_test.go).
	OnKeys func(field string, keys Keys)
	// bad are the values whose references failed to expand (reported
	// then): reading them fails without a second error.
	bad map[*yaml.Node]bool
}

// Errorf reports a problem at n (which may be nil) with field.
func (d *Decoder) Errorf(n *yaml.Node, field, format string, args ...any) {
	p := PosOf(n)
	d.Errs = append(d.Errs, &Error{File: d.File, Line: p.Line, Column: p.Column, Scope: d.Scope, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// Document parses data and returns its top-level node, which must be a
// mapping; want describes it for the error when it is not (`a mapping with
// a "tables" list`). It returns nil, with the error reported, when data is
// not valid YAML, is empty or is not a mapping.
func (d *Decoder) Document(data []byte, want string) *yaml.Node {
	if want == "" {
		want = "a mapping"
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg, line := syntaxError(err)
		line = syntaxLine(data, msg, line)
		d.Errs = append(d.Errs, &Error{File: d.File, Line: line, Msg: "not valid YAML: " + msg})
		return nil
	}
	if len(doc.Content) == 0 {
		d.Errorf(nil, "", "the file is empty (want %s)", want)
		return nil
	}
	if d.Env != nil {
		d.expandEnv(&doc, false)
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		d.Errorf(root, "", "the top level must be %s", want)
		return nil
	}
	return root
}

// syntaxError splits a YAML parser's error into its message and the
// line it names (0 when none).
func syntaxError(err error) (msg string, line int) {
	msg = err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	return strings.TrimPrefix(msg, "yaml: "), line
}

// syntaxLine finds the line of a syntax error. The parser names the line
// where the enclosing block began (line 1 for an indentation error on
// line 4 of a top-level mapping), so the error is placed at the first
// line (from that one, and up to 1000 lines after it) whose prefix of the
// document already fails with the same message; failing that, at the line
// the parser named.
func syntaxLine(data []byte, msg string, line int) int {
	end := 0
	for n := 1; end < len(data) && n <= line+1000; n++ {
		i := bytes.IndexByte(data[end:], '\n')
		if i < 0 {
			end = len(data)
		} else {
			end += i + 1
		}
		if n < line {
			continue
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data[:end], &doc); err != nil {
			if m, _ := syntaxError(err); m == msg {
				return n
			}
		}
	}
	return line
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// Keys are the handlers of a mapping's keys: each gets the key's value.
type Keys map[string]func(v *yaml.Node)

// Mapping walks the mapping n (the value of field): it reports a node
// that is not a mapping, keys that are not plain names, keys given twice
// and unknown keys (listing the known ones), and calls the handler of
// every other key in file order. at, when not nil, records where the
// mapping and each key's value were written, and marks failed the keys
// whose handler reported an error (and the mapping itself when it is not
// one). It reports whether n is a mapping.
func (d *Decoder) Mapping(n *yaml.Node, field string, at *At, keys Keys) bool {
	n = deref(n)
	if d.OnKeys != nil {
		d.OnKeys(field, keys)
	}
	if at != nil {
		at.SetNode(n)
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, field, "must be a mapping")
		if at != nil {
			at.Fail("")
		}
		return false
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Value == "" {
			d.Errorf(k, field, "a key must be a plain name")
			continue
		}
		name := Field(field, k.Value)
		if seen[k.Value] {
			d.Errorf(k, name, "given twice")
			continue
		}
		seen[k.Value] = true
		h, ok := keys[k.Value]
		if !ok {
			d.Errorf(k, name, "unknown field (known: %s)", KnownKeys(keys))
			continue
		}
		if at != nil {
			at.Set(k.Value, v)
		}
		if d.bad[v] {
			if at != nil {
				at.Fail(k.Value)
			}
			continue
		}
		before := len(d.Errs)
		h(v)
		if at != nil && len(d.Errs) > before {
			at.Fail(k.Value)
		}
	}
	return true
}

// KnownKeys lists the keys of a schema, sorted and comma-separated.
func KnownKeys(keys Keys) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Lookup returns the value of key in the mapping n, or nil. Schemas use it
// to read a key that decides how the others are read (a type, a kind)
// before walking the mapping.
func Lookup(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// List walks the list n (the value of field), calling fn with each item
// and its path (field[i]). It reports a node that is not a list and, with
// nonEmpty, an empty one; it reports whether n is a usable list.
func (d *Decoder) List(n *yaml.Node, field string, nonEmpty bool, fn func(i int, item *yaml.Node, path string)) bool {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, field, "must be a list")
		return false
	}
	if nonEmpty && len(n.Content) == 0 {
		d.Errorf(n, field, "the list is empty")
		return false
	}
	for i, item := range n.Content {
		fn(i, deref(item), Index(field, i))
	}
	return true
}

// isString reports whether n is a scalar usable as a string.
func isString(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag != "!!null" && n.Tag != "!!binary"
}

// String reads a string. It must be a scalar, not null, and not empty.
func (d *Decoder) String(n *yaml.Node, field string) (string, bool) {
	n = deref(n)
	if d.bad[n] {
		return "", false
	}
	if !isString(n) {
		d.Errorf(n, field, "must be a string")
		return "", false
	}
	if n.Value == "" {
		d.Errorf(n, field, "must not be empty")
		return "", false
	}
	return n.Value, true
}

// Strings reads a list of strings, or a single string as a list of one.
// Neither the list nor any of its strings may be empty.
func (d *Decoder) Strings(n *yaml.Node, field string) ([]string, bool) {
	n = deref(n)
	switch {
	case isString(n):
		s, ok := d.String(n, field)
		if !ok {
			return nil, false
		}
		return []string{s}, true
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.Errorf(n, field, "the list is empty")
			return nil, false
		}
		out := make([]string, 0, len(n.Content))
		for i, c := range n.Content {
			c = deref(c)
			if d.bad[c] {
				return nil, false
			}
			if !isString(c) || c.Value == "" {
				d.Errorf(c, Index(field, i), "must be a non-empty string")
				return nil, false
			}
			out = append(out, c.Value)
		}
		return out, true
	}
	d.Errorf(n, field, "must be a string or a list of strings")
	return nil, false
}

// scalar returns n's text for a number or boolean, or reports that it is
// not a scalar.
func (d *Decoder) scalar(n *yaml.Node, field, want string) (string, bool) {
	if d.bad[n] {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.Errorf(n, field, "must be %s", want)
		return "", false
	}
	return n.Value, true
}

// Bool reads true or false.
func (d *Decoder) Bool(n *yaml.Node, field string) (bool, bool) {
	n = deref(n)
	if d.bad[n] {
		return false, false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Decode(&b) != nil {
		d.Errorf(n, field, "must be true or false, not %s", describe(n))
		return false, false
	}
	return b, true
}

// Int reads an integer.
func (d *Decoder) Int(n *yaml.Node, field string) (int, bool) {
	n = deref(n)
	s, ok := d.scalar(n, field, "an integer")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		d.Errorf(n, field, "must be an integer, not %q", s)
		return 0, false
	}
	return v, true
}

// Float reads a number.
func (d *Decoder) Float(n *yaml.Node, field string) (float64, bool) {
	n = deref(n)
	s, ok := d.scalar(n, field, "a number")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.Errorf(n, field, "must be a number, not %q", s)
		return 0, false
	}
	return v, true
}

// Size reads a positive count of bytes or items: an integer, optionally
// with a binary suffix (64KiB, 4MiB, 1GiB; K and M are KiB and MiB).
func (d *Decoder) Size(n *yaml.Node, field string) (int, bool) { return d.size(n, field, false) }

// DefaultedSize reads a size as Size does, for a key whose default is what
// leaving it out gives: its error for 0, which is neither that default
// nor "none", says so.
func (d *Decoder) DefaultedSize(n *yaml.Node, field string) (int, bool) {
	return d.size(n, field, true)
}

func (d *Decoder) size(n *yaml.Node, field string, defaulted bool) (int, bool) {
	n = deref(n)
	s, ok := d.scalar(n, field, "a positive integer")
	if !ok {
		return 0, false
	}
	v, err := ParseSize(s)
	if err != nil || v < 1 {
		hint := ""
		if defaulted && err == nil && v == 0 {
			hint = fmt.Sprintf(" (leave %s out for the default)", field[strings.LastIndexByte(field, '.')+1:])
		}
		d.Errorf(n, field, "must be a positive integer (suffixes KiB, MiB, GiB allowed), not %q%s", s, hint)
		return 0, false
	}
	return v, true
}

// ParseSize parses "123", "64KiB", "4MiB", "1GiB" (and "64K", "4M").
func ParseSize(s string) (int, error) {
	mult := 1
	for _, u := range []struct {
		suf string
		m   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suf)), u.m
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n > (1<<40)/mult || n < -(1<<40)/mult {
		return 0, fmt.Errorf("%s is too large", s)
	}
	return n * mult, nil
}

// Duration reads a duration that is not negative (5ms, 30s, 10m).
func (d *Decoder) Duration(n *yaml.Node, field string) (time.Duration, bool) {
	n = deref(n)
	s, ok := d.scalar(n, field, "a duration such as 5ms, 30s or 10m")
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		d.Errorf(n, field, "must be a duration such as 5ms, 30s or 10m, not %q", s)
		return 0, false
	}
	return v, true
}

// Pair is one entry of a mapping read by Pairs.
type Pair struct {
	Key, Value string
	Pos        Pos // where the key was written
}

// Pairs reads a mapping from names to strings, in file order. Keys and
// values must be non-empty strings, each key given once; an empty mapping
// is an error.
func (d *Decoder) Pairs(n *yaml.Node, field string) ([]Pair, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, field, "must be a mapping")
		return nil, false
	}
	if len(n.Content) == 0 {
		d.Errorf(n, field, "must not be empty")
		return nil, false
	}
	out := make([]Pair, 0, len(n.Content)/2)
	ok := true
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		key, kok := d.String(k, field)
		if !kok {
			ok = false
			continue
		}
		if seen[key] {
			d.Errorf(k, Field(field, key), "given twice")
			ok = false
			continue
		}
		seen[key] = true
		val, vok := d.String(v, Field(field, key))
		if !vok {
			ok = false
			continue
		}
		out = append(out, Pair{Key: key, Value: val, Pos: PosOf(k)})
	}
	return out, ok
}

// describe is how an error quotes a node that has the wrong type.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Tag == "!!null" {
		return "null"
	}
	return strconv.Quote(n.Value)
}
