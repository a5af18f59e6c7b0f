package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// expandEnv replaces, in every scalar value under n (not in keys), the
// references ${VAR} and ${VAR:-default} by the value of the variable
// (the default when it is unset or empty), and $$ by a single $. A
// variable that is not set and has no default, and a reference that is
// not closed or names no variable, is reported at the reference's
// file:line:column. A $ followed by anything else is kept as written.
func (d *Decoder) expandEnv(n *yaml.Node, key bool) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			d.expandEnv(c, false)
		}
	case yaml.MappingNode:
		for i, c := range n.Content {
			d.expandEnv(c, i%2 == 0)
		}
	case yaml.ScalarNode:
		if key || !strings.Contains(n.Value, "$") {
			return
		}
		v, ok := d.expand(n)
		if !ok {
			if d.bad == nil {
				d.bad = map[*yaml.Node]bool{}
			}
			d.bad[n] = true
			return
		}
		n.Value = v
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 && v != "" {
			// A plain value is typed by what it becomes: ${PORT} may be
			// an integer, ${ON} a boolean.
			n.Tag = ""
		}
	}
}

// expand returns n's value with its references replaced.
func (d *Decoder) expand(n *yaml.Node) (string, bool) {
	s := n.Value
	var b strings.Builder
	ok := true
	at := func(i int) *yaml.Node {
		// The column of the reference, exact on a one-line value.
		p := *n
		if !strings.Contains(s[:i], "\n") {
			p.Column += i
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				p.Column++
			}
		}
		return &p
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) || (s[i+1] != '$' && s[i+1] != '{') {
			b.WriteByte(c)
			i++
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i += 2
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			d.Errorf(at(i), "", "%s: a ${ without its closing }", s[i:])
			return "", false
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			d.Errorf(at(i), "", "${%s}: %q is not a variable name (letters, digits and _, not starting with a digit; ${VAR} or ${VAR:-default})", ref, name)
			ok = false
		} else if v, set := d.Env(name); set && v != "" {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			if set {
				d.Errorf(at(i), "", "${%s}: the environment variable %s is empty (give it a value, or a default: ${%s:-default})", ref, name, name)
			} else {
				d.Errorf(at(i), "", "${%s}: the environment variable %s is not set (set it, or give a default: ${%s:-default})", ref, name, name)
			}
			ok = false
		}
		i += end + 1
	}
	return b.String(), ok
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		word := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !word {
			return false
		}
	}
	return true
}
