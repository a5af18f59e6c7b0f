package iptable

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// AliasMode says whether an IPv6 file gets the IPv4 aliases: the networks
// ::ffff:0:0/96, 2001::/32 and 2002::/16 made to lead to the IPv4 data, so
// that ::ffff:a.b.c.d, 2001:0:aabb:ccdd:: (Teredo) and 2002:aabb:ccdd::
// (6to4) find the record of a.b.c.d (aa.bb.cc.dd). A source with data in
// one of those networks collides with the alias: the writer (mmdbwriter,
// which can only make all three aliases or none) cannot hold both.
type AliasMode int

// Alias modes.
const (
	// AliasAuto writes the aliases unless a source has data in one of
	// their networks; then it writes none and Stats says why.
	AliasAuto AliasMode = iota
	// AliasOn writes the aliases; a colliding row is an error.
	AliasOn
	// AliasOff writes no aliases.
	AliasOff
)

// ParseAliasMode parses "auto", "on" or "off".
func ParseAliasMode(s string) (AliasMode, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return AliasAuto, nil
	case "on":
		return AliasOn, nil
	case "off":
		return AliasOff, nil
	}
	return 0, fmt.Errorf("unknown IPv4 alias mode %q (want auto, on or off)", s)
}

func (m AliasMode) String() string {
	switch m {
	case AliasOn:
		return "on"
	case AliasOff:
		return "off"
	}
	return "auto"
}

// AliasCollision is the first row of a source with data in an alias
// network.
type AliasCollision struct {
	Alias  netip.Prefix // the alias network
	Prefix netip.Prefix // the row's network that overlaps it
	Source string       // file:line:column of the row's network
}

func (c AliasCollision) String() string {
	return fmt.Sprintf("%s: %s overlaps %s", c.Source, c.Prefix, mmdb.AliasString(c.Alias))
}

// AliasCollisionError stops a build with AliasOn (and the first attempt
// of AliasAuto) at a row inside an alias network. Compile returns it
// wrapped in the row's error (a *source.RowError at the network's
// file:line:column, or the base file's network number).
type AliasCollisionError struct{ AliasCollision }

func (e *AliasCollisionError) Error() string {
	return fmt.Sprintf("%s has data in %s, which --ipv4-aliases on keeps as an alias of the IPv4 space; "+
		"build with --ipv4-aliases auto or off to keep the row (the file then has no IPv4 aliases)",
		e.Prefix, mmdb.AliasString(e.Alias))
}

// aliasGuard watches the networks of a build for collisions with the
// aliases.
type aliasGuard struct {
	mode AliasMode
	// collisions has the first collision per alias network (AliasOff).
	collisions []AliasCollision
}

func newAliasGuard(o *Options) *aliasGuard {
	return &aliasGuard{mode: o.IPv4Aliases}
}

// writesAliases reports whether the tree gets the aliases.
func (g *aliasGuard) writesAliases(o *Options) bool {
	return o.IPVersion == 6 && g.mode != AliasOff
}

// check returns an error for a network that collides while the aliases
// are written, and records the first collision per alias otherwise.
func (g *aliasGuard) check(src *Source, e *entry) error {
	p := e.prefix
	if p.Addr().Is4() {
		return nil
	}
	for _, a := range mmdb.AliasNetworks {
		if !p.Overlaps(a) {
			continue
		}
		c := AliasCollision{Alias: a, Prefix: p, Source: describeCol(src, e.line, e.col)}
		if g.mode != AliasOff {
			return rowError(src, e, &AliasCollisionError{c})
		}
		if !g.seen(a) {
			g.collisions = append(g.collisions, c)
		}
	}
	return nil
}

func (g *aliasGuard) seen(a netip.Prefix) bool {
	for _, c := range g.collisions {
		if c.Alias == a {
			return true
		}
	}
	return false
}

// Compile builds an MMDB from sources (in layering order), writes it
// atomically to out and checks it. On any error out is left untouched.
// With AliasAuto, a source row in an alias network makes it build again
// without aliases (Stats.AliasCollisions says which rows).
func Compile(out string, opts Options, sources []Source) (*Stats, error) {
	st, err := compileOnce(out, opts, sources)
	var ce *AliasCollisionError
	if opts.IPv4Aliases != AliasAuto || !errors.As(err, &ce) {
		return st, err
	}
	opts.IPv4Aliases = AliasOff
	st, err = compileOnce(out, opts, sources)
	if err != nil {
		return st, err
	}
	st.AliasMode = AliasAuto
	var cs []string
	for _, c := range st.AliasCollisions {
		cs = append(cs, c.String())
	}
	st.Warnings = append(st.Warnings, fmt.Sprintf(
		"built without IPv4 aliases, because the sources have data in aliased networks (%s): "+
			"::ffff:a.b.c.d, 2001:0:aabb:ccdd:: and 2002:aabb:ccdd:: addresses are looked up as IPv6 addresses (docs/mmdb.md, IPv4 aliases)",
		strings.Join(cs, "; ")))
	return st, nil
}
