package config

import "go.yaml.in/yaml/v3"

// Pos is a place in a configuration file (1-based; 0 when unknown).
type Pos struct{ Line, Column int }

// PosOf returns the position of a node (the zero Pos for nil).
func PosOf(n *yaml.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return Pos{n.Line, n.Column}
}

// origin is where a value came from: a place in the file, or a flag.
type origin struct {
	pos  Pos
	flag string
}

// At records where a struct of a configuration came from, for the errors
// of its Validate method: the position of the struct itself, where each
// of its keys was given (or the flag that set it), and which keys failed
// to decode. The zero At (a struct built in code) knows no position. Keys
// are the names of the YAML keys; a schema may record sub-keys as well
// ("columns[2]").
type At struct {
	self   origin
	keys   map[string]origin
	failed map[string]bool
}

// SetNode records where the struct itself was written.
func (a *At) SetNode(n *yaml.Node) { a.self.pos = PosOf(n) }

// Set records where key's value was written.
func (a *At) Set(key string, n *yaml.Node) { a.setOrigin(key, origin{pos: PosOf(n)}) }

// SetPos records that key's value was written at p.
func (a *At) SetPos(key string, p Pos) { a.setOrigin(key, origin{pos: p}) }

// SetFlag records that key was set by a command-line flag (such as
// "--format"); with key "", that the whole struct was made from it.
func (a *At) SetFlag(key, flag string) {
	if key == "" {
		a.self = origin{flag: flag}
		return
	}
	a.setOrigin(key, origin{flag: flag})
}

func (a *At) setOrigin(key string, o origin) {
	if a.keys == nil {
		a.keys = map[string]origin{}
	}
	a.keys[key] = o
}

// Fail marks key as failed to decode (key "": the struct itself); the
// error was reported then, and Validate's errors about it are dropped.
func (a *At) Fail(key string) {
	if a.failed == nil {
		a.failed = map[string]bool{}
	}
	a.failed[key] = true
}

// Failed reports whether key (or, with "", the struct) failed to decode.
func (a *At) Failed(key string) bool { return a.failed[key] }

// Given reports whether key was given (in the file or by a flag).
func (a *At) Given(key string) bool {
	_, ok := a.keys[key]
	return ok
}

// Pos returns where the struct was written.
func (a *At) Pos() Pos { return a.self.pos }

// KeyPos returns where key's value was written, or where the struct was
// when the key was not given.
func (a *At) KeyPos(key string) Pos {
	if o, ok := a.keys[key]; ok && o.flag == "" {
		return o.pos
	}
	return a.self.pos
}

// Flag returns the flag that set key, or else the flag that made the
// struct, or "".
func (a *At) Flag(key string) string {
	if o, ok := a.keys[key]; ok {
		return o.flag
	}
	return a.self.flag
}
