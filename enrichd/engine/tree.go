package engine

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/internal/jsonstr"
)

// leafKind says where an output member's value comes from.
type leafKind uint8

const (
	lfNone leafKind = iota // an inner node
	lfTimestamp
	lfHostName
	lfFacility
	lfSeverity
	lfAppName
	lfMsgID
	lfProcIDStr // non-numeric PROCID
	lfPID       // numeric PROCID
	lfSD        // RFC 5424 structured data, as an object of objects
	lfMessage
	lfOriginal
	lfTLSClient
	lfKV      // the key=value pairs of the message, written as members of the enclosing object
	lfLUTCol  // column col of rule's row (or its default on a miss)
	lfLUTAll  // every column of rule's row as an object (or the defaults on a miss)
	lfMMDB    // record field col of rule's match (or its default on a miss)
	lfDefault // a default value written only on a miss
	lfEach    // the array an Each rule wrote (each_lookup.go)
	lfClose   // an encoding op only: closes the object of the matching lfNone op
)

// node is one member of the output object tree. The tree is built once
// from the configuration; encoding walks it per event and drops objects
// that end up empty.
type node struct {
	name     string
	key      []byte // pre-encoded `"name":`
	kind     leafKind
	rule     int
	col      int    // column (lfLUTCol) or field (lfMMDB) index within the rule
	def      []byte // pre-encoded default value for a miss, or nil
	children []*node
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// insert adds a leaf at path, creating inner nodes.
func (n *node) insert(path []string, leaf *node, what string) error {
	cur := n
	for i, seg := range path {
		c := cur.child(seg)
		last := i == len(path)-1
		if c == nil {
			if last {
				leaf.name = seg
				leaf.key = jsonstr.AppendKeyS(nil, seg)
				cur.children = append(cur.children, leaf)
				return nil
			}
			c = &node{name: seg, key: jsonstr.AppendKeyS(nil, seg)}
			cur.children = append(cur.children, c)
		}
		if last || c.kind != lfNone {
			return fmt.Errorf("output field %q (%s) collides with another output field", strings.Join(path[:i+1], "."), what)
		}
		cur = c
	}
	return nil
}

// buildTree lays out the output object of every event.
func buildTree(rules []Rule, opts Options) (*node, error) {
	root := &node{}
	add := func(path string, leaf *node, what string) error {
		return root.insert(strings.Split(path, "."), leaf, what)
	}
	hdr := []struct {
		path string
		kind leafKind
	}{
		{"@timestamp", lfTimestamp},
		{"host.name", lfHostName},
		{"log.syslog.facility.code", lfFacility},
		{"log.syslog.severity.code", lfSeverity},
		{"log.syslog.appname", lfAppName},
		{"log.syslog.msgid", lfMsgID},
		{"log.syslog.procid", lfProcIDStr},
		{"log.syslog.structured_data", lfSD},
		{"process.pid", lfPID},
		{"message", lfMessage},
		{"event.original", lfOriginal},
		{"tls.client.subject", lfTLSClient},
	}
	for _, h := range hdr {
		if h.kind == lfSD && !opts.StructuredData || h.kind == lfOriginal && !opts.Original || h.kind == lfTLSClient && !opts.TLSClient {
			continue
		}
		if err := add(h.path, &node{kind: h.kind}, "event header"); err != nil {
			return nil, err
		}
	}
	// The key=value pairs are members of the top level.
	root.children = append(root.children, &node{kind: lfKV})
	for ri, r := range rules {
		what := fmt.Sprintf("rule %q", r.Name)
		defs := map[string][]byte{}
		for _, d := range r.Defaults {
			defs[d.From] = jsonstr.AppendStringS(nil, d.To)
		}
		used := map[string]bool{}
		switch {
		case r.Each || r.MaxMatches > 1:
			if err := add(r.Target, &node{kind: lfEach, rule: ri}, what); err != nil {
				return nil, err
			}
			continue
		case r.MMDB:
			for j, f := range r.MMDBFields {
				if err := add(r.Target+"."+f.To, &node{kind: lfMMDB, rule: ri, col: j, def: defs[f.To]}, what); err != nil {
					return nil, err
				}
				used[f.To] = true
			}
		case r.Columns == nil:
			// Every column: one object, written from the row; defaults
			// make the object written on a miss.
			var def []byte
			if len(r.Defaults) > 0 {
				o := jsonstr.Object{}
				o.Begin()
				for _, d := range r.Defaults {
					o.StringS(d.From, d.To)
				}
				def = o.End()
			}
			if err := add(r.Target, &node{kind: lfLUTAll, rule: ri, def: def}, what); err != nil {
				return nil, err
			}
			continue
		default:
			for j, c := range r.Columns {
				// A column name is one output name: dots in a rename nest.
				if err := root.insert(append(strings.Split(r.Target, "."), strings.Split(c.To, ".")...),
					&node{kind: lfLUTCol, rule: ri, col: j, def: defs[c.To]}, what); err != nil {
					return nil, err
				}
				used[c.To] = true
			}
		}
		for _, d := range r.Defaults {
			if !used[d.From] {
				if err := add(r.Target+"."+d.From, &node{kind: lfDefault, rule: ri, def: defs[d.From]}, what); err != nil {
					return nil, err
				}
			}
		}
	}
	return root, nil
}

// op is one step of the encoding program compiled from the output tree:
// opening an object (lfNone), closing it (lfClose), or writing one member.
type op struct {
	kind leafKind
	// key is the member's `,"name":`, written without the comma when it is
	// the first member of its object. A chain of objects that have one
	// member each is folded into the key of the innermost member
	// (`,"a":{"b":{"c":`), and end closes it (`}}`). An lfNone op's key
	// ends with the '{' of its object; an lfClose op's end holds its '}'.
	key   memberKey
	end   closer
	rule  int
	col   int    // as node.col
	def   []byte // as node.def
	depth int    // lfNone, lfClose: the nesting depth of the object (from 0)
}

// compileTree flattens the output tree into the program that writes the
// members of root, so that encoding an event is one loop over the ops.
// It returns the program and the deepest nesting of objects it opens.
func compileTree(root *node) (prog []op, depth int) {
	var members func(n *node, d int)
	members = func(n *node, d int) {
		depth = max(depth, d)
		for _, m := range n.children {
			if m.kind == lfKV {
				prog = append(prog, op{kind: lfKV})
				continue
			}
			key := append([]byte{','}, m.key...)
			var end []byte
			for m.kind == lfNone && len(m.children) == 1 {
				m = m.children[0]
				key = append(append(key, '{'), m.key...)
				end = append(end, '}')
			}
			if m.kind != lfNone {
				prog = append(prog, op{kind: m.kind, key: newMemberKey(key), end: newCloser(end), rule: m.rule, col: m.col, def: m.def})
				continue
			}
			prog = append(prog, op{kind: lfNone, key: newMemberKey(append(key, '{')), depth: d})
			members(m, d+1)
			prog = append(prog, op{kind: lfClose, end: newCloser(append(end, '}')), depth: d})
		}
	}
	members(root, 0)
	return prog, depth
}
