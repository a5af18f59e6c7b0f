package iptable

// This file is the only one that talks to mmdbwriter (v1 API: *net.IPNet,
// inserter.Func), so a move to another writer version stays local.

import (
	"io"
	"net/netip"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/inserter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go4.org/netipx"
)

// treeWriter builds the search tree and data section.
type treeWriter struct {
	tree *mmdbwriter.Tree
	// fix, when set, adjusts every value stored (city location default).
	fix func(mmdbtype.DataType) mmdbtype.DataType
}

// newTreeWriter starts a tree; aliases makes ::ffff:0:0/96, 2001::/32 and
// 2002::/16 lead to the IPv4 data (mmdbwriter makes all three or none).
func newTreeWriter(o *Options, aliases bool) (*treeWriter, error) {
	t, err := mmdbwriter.New(mmdbwriter.Options{
		BuildEpoch:              o.BuildEpoch,
		DatabaseType:            o.DatabaseType,
		Description:             map[string]string{"en": o.Description},
		Languages:               o.Languages,
		IPVersion:               o.IPVersion,
		RecordSize:              o.RecordSize,
		IncludeReservedNetworks: true,
		DisableIPv4Aliasing:     !aliases,
		DisableMetadataPointers: true,
	})
	if err != nil {
		return nil, err
	}
	return &treeWriter{tree: t}, nil
}

// insert stores v for p, combined with what is there as m says. IPv4
// prefixes must be 4-byte (Is4): the writer moves them under ::/96.
func (w *treeWriter) insert(p netip.Prefix, v mmdbtype.DataType, m Merge) error {
	var f inserter.Func
	switch m {
	case MergeTop:
		f = inserter.TopLevelMergeWith(v)
	case MergeDeep:
		f = inserter.DeepMergeWith(v)
	default:
		f = inserter.ReplaceWith(v)
	}
	if w.fix != nil {
		inner, fix := f, w.fix
		f = func(old mmdbtype.DataType) (mmdbtype.DataType, error) {
			nv, err := inner(old)
			if err != nil || nv == nil {
				return nv, err
			}
			return fix(nv), nil
		}
	}
	return w.tree.InsertFunc(netipx.PrefixIPNet(p), f)
}

func (w *treeWriter) writeTo(out io.Writer) (int64, error) {
	return w.tree.WriteTo(out)
}

// newUnmarshaler returns a decoder target that turns records of an existing
// MMDB into writer values.
func newUnmarshaler() *mmdbtype.Unmarshaler { return mmdbtype.NewUnmarshaler() }
