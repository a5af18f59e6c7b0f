package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// server is a small schema exercising every helper, as enrichd.yaml and
// tables.yaml use them.
type server struct {
	At      At
	Name    string
	Mode    mode
	Listen  string
	Tags    []string
	Debug   bool
	Retries int
	Ratio   float64
	Buffer  int
	Timeout time.Duration
	Labels  []Pair
	Peers   []peer
}

type mode string

type peer struct {
	At   At
	Addr string
}

func decodeServer(d *Decoder, n *yaml.Node) *server {
	s := &server{}
	d.Mapping(n, "", &s.At, Keys{
		"name":    func(v *yaml.Node) { s.Name, _ = d.String(v, "name") },
		"mode":    func(v *yaml.Node) { m, _ := d.String(v, "mode"); s.Mode = mode(m) },
		"listen":  func(v *yaml.Node) { s.Listen, _ = d.String(v, "listen") },
		"tags":    func(v *yaml.Node) { s.Tags, _ = d.Strings(v, "tags") },
		"debug":   func(v *yaml.Node) { s.Debug, _ = d.Bool(v, "debug") },
		"retries": func(v *yaml.Node) { s.Retries, _ = d.Int(v, "retries") },
		"ratio":   func(v *yaml.Node) { s.Ratio, _ = d.Float(v, "ratio") },
		"buffer":  func(v *yaml.Node) { s.Buffer, _ = d.Size(v, "buffer") },
		"timeout": func(v *yaml.Node) { s.Timeout, _ = d.Duration(v, "timeout") },
		"labels":  func(v *yaml.Node) { s.Labels, _ = d.Pairs(v, "labels") },
		"peers": func(v *yaml.Node) {
			d.List(v, "peers", true, func(i int, item *yaml.Node, path string) {
				var p peer
				d.Mapping(item, path, &p.At, Keys{"addr": func(v *yaml.Node) { p.Addr, _ = d.String(v, path+".addr") }})
				s.Peers = append(s.Peers, p)
			})
		},
	})
	return s
}

func (s *server) validate(v *Validator) {
	sc := v.In(&s.At, "")
	sc.Require("name", s.Name != "", "")
	sc.Require("mode", s.Mode != "", "fast or slow")
	if s.Mode != "" {
		sc.Check("mode", OneOf(s.Mode, "fast", "slow"))
	}
	sc.Check("listen", CheckAddr(s.Listen))
	for i := range s.Peers {
		p := v.In(&s.Peers[i].At, Index("peers", i))
		p.Require("addr", s.Peers[i].Addr != "", "HOST:PORT")
	}
}

// load decodes and validates yml, returning the struct and the errors as
// text, one per line.
func load(t *testing.T, yml string) (*server, string) {
	t.Helper()
	d := &Decoder{File: "s.yaml"}
	root := d.Document([]byte(yml), "a mapping of server settings")
	if root == nil {
		return nil, d.Errs.Error()
	}
	s := decodeServer(d, root)
	v := &Validator{File: "s.yaml", Errs: d.Errs}
	s.validate(v)
	if err := v.Err(); err != nil {
		return s, err.Error()
	}
	return s, ""
}

func TestDecodeValues(t *testing.T) {
	s, errs := load(t, `
name: web
mode: fast
listen: "127.0.0.1:80"
tags: one
debug: true
retries: -2
ratio: 0.5
buffer: 4MiB
timeout: 1m30s
labels: {team: edge, tier: "1"}
peers:
  - {addr: "a:1"}
  - addr: "b:2"
`)
	if errs != "" {
		t.Fatal(errs)
	}
	if s.Name != "web" || s.Mode != "fast" || len(s.Tags) != 1 || s.Tags[0] != "one" || !s.Debug || s.Retries != -2 ||
		s.Ratio != 0.5 || s.Buffer != 4<<20 || s.Timeout != 90*time.Second || len(s.Peers) != 2 || s.Peers[1].Addr != "b:2" {
		t.Fatalf("decoded %+v", s)
	}
	if len(s.Labels) != 2 || s.Labels[1] != (Pair{Key: "tier", Value: "1", Pos: Pos{11, 22}}) {
		t.Fatalf("labels %+v", s.Labels)
	}
	if p := s.At.KeyPos("buffer"); p != (Pos{9, 9}) {
		t.Errorf("buffer at %v, want 9:9", p)
	}
	if p := s.At.KeyPos("missing"); p != (Pos{2, 1}) {
		t.Errorf("a key not given is placed at the struct, %v", p)
	}
	if !s.At.Given("ratio") || s.At.Given("missing") {
		t.Errorf("Given wrong")
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ yml, want string }{
		{"name: [a]\nmode: fast\n", "s.yaml:1:7: name: must be a string"},
		{"name: ''\nmode: fast\n", "s.yaml:1:7: name: must not be empty"},
		{"name:\nmode: fast\n", "s.yaml:1:6: name: must be a string"},
		{"name: a\nmode: fast\ntags: []\n", "s.yaml:3:7: tags: the list is empty"},
		{"name: a\nmode: fast\ntags: [a, '']\n", "s.yaml:3:11: tags[1]: must be a non-empty string"},
		{"name: a\nmode: fast\ntags: [a, ~]\n", "s.yaml:3:11: tags[1]: must be a non-empty string"},
		{"name: a\nmode: fast\ntags: {a: b}\n", "s.yaml:3:7: tags: must be a string or a list of strings"},
		{"name: a\nmode: fast\ndebug: maybe\n", `s.yaml:3:8: debug: must be true or false, not "maybe"`},
		{"name: a\nmode: fast\ndebug: [x]\n", `s.yaml:3:8: debug: must be true or false, not a list`},
		{"name: a\nmode: fast\nretries: 1.5\n", `s.yaml:3:10: retries: must be an integer, not "1.5"`},
		{"name: a\nmode: fast\nratio: x\n", `s.yaml:3:8: ratio: must be a number, not "x"`},
		{"name: a\nmode: fast\nbuffer: 0\n", `s.yaml:3:9: buffer: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0"`},
		{"name: a\nmode: fast\nbuffer: 2TiB\n", `buffer: must be a positive integer`},
		{"name: a\nmode: fast\nbuffer: 99999999GiB\n", `buffer: must be a positive integer`},
		{"name: a\nmode: fast\ntimeout: -1s\n", `s.yaml:3:10: timeout: must be a duration such as 5ms, 30s or 10m, not "-1s"`},
		{"name: a\nmode: fast\ntimeout: {}\n", `s.yaml:3:10: timeout: must be a duration such as 5ms, 30s or 10m`},
		{"name: a\nmode: fast\nlabels: [a]\n", `s.yaml:3:9: labels: must be a mapping`},
		{"name: a\nmode: fast\nlabels: {}\n", `s.yaml:3:9: labels: must not be empty`},
		{"name: a\nmode: fast\nlabels: {a: ''}\n", `s.yaml:3:13: labels.a: must not be empty`},
		{"name: a\nmode: fast\nlabels: {a: [b]}\n", `s.yaml:3:13: labels.a: must be a string`},
		{"name: a\nmode: fast\npeers: {}\n", `s.yaml:3:8: peers: must be a list`},
		{"name: a\nmode: fast\npeers: []\n", `s.yaml:3:8: peers: the list is empty`},
		{"name: a\nmode: fast\npeers: [x]\n", `s.yaml:3:9: peers[0]: must be a mapping`},
		{"name: a\nmode: fast\npeers: [{addr: a:1, port: 2}]\n", `s.yaml:3:21: peers[0].port: unknown field (known: addr)`},
		{"name: a\nmode: fast\nnamed: b\n", `s.yaml:3:1: named: unknown field (known: buffer, debug, labels, listen, mode, name, peers, ratio, retries, tags, timeout)`},
		{"name: a\nmode: fast\nname: b\n", `s.yaml:3:1: name: given twice`},
		{"name: a\nmode: fast\n[x]: b\n", `s.yaml:3:1: a key must be a plain name`},
		{"name: a\nmode: fast\n? ''\n: b\n", `s.yaml:3:3: a key must be a plain name`},
		{"- a\n", "s.yaml:1:1: the top level must be a mapping of server settings"},
		{"", "s.yaml: the file is empty (want a mapping of server settings)"},
		{"# nothing\n", "s.yaml: the file is empty"},
		{"name: a\nmode: b\n  c: 3\n", "s.yaml:3: not valid YAML: mapping values are not allowed in this context"},
		{"a: b: c\n", "s.yaml:1: not valid YAML: mapping values are not allowed in this context"},
		// Validation.
		{"mode: fast\n", "s.yaml:1:1: name: required"},
		{"name: a\n", "s.yaml:1:1: mode: required: fast or slow"},
		{"name: a\nmode: fats\n", `s.yaml:2:7: mode: must be one of fast, slow, not "fats"`},
		{"name: a\nmode: fast\nlisten: nohost\n", `s.yaml:3:9: listen: must be HOST:PORT: address nohost: missing port in address`},
		{"name: a\nmode: fast\npeers:\n  - {}\n", `s.yaml:4:5: peers[0].addr: required: HOST:PORT`},
	} {
		_, got := load(t, tc.yml)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q:\n got %s\nwant %s", tc.yml, got, tc.want)
		}
	}
}

// TestNoSecondError: a value that fails to decode is reported once, not
// also by the checks of Validate.
func TestNoSecondError(t *testing.T) {
	for _, yml := range []string{"name: a\nmode: [fast]\n", "name: a\nmode: ''\n", "name: [a]\nmode: fast\n", "name: a\nmode: fast\npeers: [{addr: [x]}]\n"} {
		_, got := load(t, yml)
		if n := strings.Count(got, "\n") + 1; got == "" || n != 1 {
			t.Errorf("%q: %d errors, want 1:\n%s", yml, n, got)
		}
	}
	// A struct that is not a mapping is not checked further either.
	_, got := load(t, "name: a\nmode: fast\npeers: [[x]]\n")
	if strings.Count(got, "\n") != 0 || !strings.Contains(got, "peers[0]: must be a mapping") {
		t.Errorf("got %s", got)
	}
}

// TestEveryError: all problems of a file are reported at once, sorted by
// position.
func TestEveryError(t *testing.T) {
	_, got := load(t, "peers: [{}]\nname: ''\nbogus: 1\ndebug: 2\n")
	want := strings.Join([]string{
		"s.yaml:1:1: mode: required: fast or slow",
		"s.yaml:1:9: peers[0].addr: required: HOST:PORT",
		"s.yaml:2:7: name: must not be empty",
		"s.yaml:3:1: bogus: unknown field (known: buffer, debug, labels, listen, mode, name, peers, ratio, retries, tags, timeout)",
		`s.yaml:4:8: debug: must be true or false, not "2"`,
	}, "\n")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestAliases(t *testing.T) {
	_, errs := load(t, "base: &b {addr: \"x:1\"}\nname: &n web\nmode: fast\n")
	if !strings.Contains(errs, "base: unknown field") {
		t.Fatalf("got %s", errs)
	}
	s, errs := load(t, "name: &n web\nmode: fast\ntags: [*n]\npeers: [&p {addr: \"x:1\"}, *p]\n")
	if errs != "" || s.Tags[0] != "web" || len(s.Peers) != 2 || s.Peers[1].Addr != "x:1" {
		t.Fatalf("%+v %s", s, errs)
	}
}

// TestFlags: a value set from a flag is reported by the flag's name.
func TestFlags(t *testing.T) {
	s := &server{Name: "a", Mode: "fats", Listen: "x"}
	s.At.SetFlag("mode", "--mode")
	s.At.SetFlag("listen", "--listen")
	v := &Validator{File: "s.yaml"}
	s.validate(v)
	got := v.Err().Error()
	want := "--mode: must be one of fast, slow, not \"fats\"\n--listen: must be HOST:PORT: address x: missing port in address"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A struct made from a flag names it for keys it did not set.
	p := &peer{}
	p.At.SetFlag("", "--peer")
	v = &Validator{}
	v.In(&p.At, "peers[0]").Require("addr", false, "")
	if got := v.Err().Error(); got != "--peer: required" {
		t.Fatalf("got %s", got)
	}
	// A struct built in code has no position: the field path alone.
	v = &Validator{}
	v.In(&At{}, "peers[0]").Require("addr", false, "")
	if got := v.Err().Error(); got != "peers[0].addr: required" {
		t.Fatalf("got %s", got)
	}
}

func TestScopeIn(t *testing.T) {
	d := &Decoder{File: "s.yaml"}
	root := d.Document([]byte("outer:\n  inner: {}\n"), "")
	var outer, inner At
	d.Mapping(root, "", &outer, Keys{"outer": func(v *yaml.Node) {
		d.Mapping(v, "outer", &At{}, Keys{"inner": func(v *yaml.Node) { d.Mapping(v, "outer.inner", &inner, Keys{}) }})
	}})
	v := &Validator{File: "s.yaml"}
	v.In(&inner, "outer.inner").Errorf("x", "bad")
	// A struct made in code inside a decoded one is placed at its key.
	var made At
	v.In(&outer, "").In(&made, "outer").Errorf("y", "also bad")
	if got := v.Err().Error(); got != "s.yaml:2:3: outer.y: also bad\ns.yaml:2:10: outer.inner.x: bad" {
		t.Fatalf("got %s", got)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f", Line: 3, Column: 4, Scope: `table "x"`, Field: "key", Msg: "missing"}, `f:3:4: table "x": key: missing`},
		{Error{File: "f", Line: 3, Msg: "bad"}, `f:3: bad`},
		{Error{File: "f", Msg: "empty"}, `f: empty`},
		{Error{Field: "--verify", Msg: "no"}, `--verify: no`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if (Errors{}).Err() != nil {
		t.Error("empty Errors is not nil")
	}
	if Field("a", "[1]") != "a[1]" || Field("", "b") != "b" || Field("a", "") != "a" || Field("a", "b") != "a.b" {
		t.Error("Field")
	}
}

func TestLookup(t *testing.T) {
	d := &Decoder{File: "s.yaml"}
	root := d.Document([]byte("type: tcp\nother: 1\n"), "")
	if v := Lookup(root, "type"); v == nil || v.Value != "tcp" {
		t.Fatal("Lookup type")
	}
	if Lookup(root, "nope") != nil || Lookup(Lookup(root, "other"), "x") != nil || Lookup(nil, "x") != nil {
		t.Fatal("Lookup of a missing key")
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int{"1": 1, "64KiB": 64 << 10, "64K": 64 << 10, "4 MiB": 4 << 20, "4M": 4 << 20, "1GiB": 1 << 30} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "x", "1TiB", "1.5MiB", "2000GiB"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) accepted", s)
		}
	}
}
