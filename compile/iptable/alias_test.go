package iptable

import (
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/reader/mmdb"
)

func aliasesOf(t *testing.T, path string) []netip.Prefix {
	t.Helper()
	r, err := mmdb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.IPv4Aliases()
}

// TestRealIPv6DataCompiles: public IPv6 range data has rows in 2001::/32
// (Teredo) and 2002::/16 (6to4). It compiles, without the aliases, and
// the rows are in the file; --ipv4-aliases on names the first such row.
func TestRealIPv6DataCompiles(t *testing.T) {
	src := Source{Kind: CSVRanges, Path: testfiles.Fetched(t, "asn-ipv6.csv"), Columns: asnColumns,
		StartColumn: "ip_range_start", EndColumn: "ip_range_end",
		Fields: []Field{{Path: "autonomous_system_number", Column: "autonomous_system_number"},
			{Path: "autonomous_system_organization", Column: "autonomous_system_organization"}}}
	dir := t.TempDir()
	out := filepath.Join(dir, "asn6.mmdb")
	opts := Options{Profile: ProfileASN, DatabaseType: "GeoLite2-ASN", BuildEpoch: 1700000000}
	st, err := Compile(out, opts, []Source{src})
	if err != nil {
		t.Fatal(err)
	}
	if st.IPv4Aliases || st.AliasMode != AliasAuto || len(st.AliasCollisions) != 2 {
		t.Fatalf("aliases %v, mode %v, collisions %v", st.IPv4Aliases, st.AliasMode, st.AliasCollisions)
	}
	base := src.Path
	for i, want := range []string{base + ":1:1: 2001::/32 overlaps 2001::/32", base + ":17580:1: 2002::/16 overlaps 2002::/16"} {
		if got := st.AliasCollisions[i].String(); got != want {
			t.Errorf("collision %d: %q, want %q", i, got, want)
		}
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "built without IPv4 aliases") }) {
		t.Errorf("no warning about the aliases: %q", st.Warnings)
	}
	if a := aliasesOf(t, out); a != nil {
		t.Errorf("file has aliases %v", a)
	}
	for ip, asn := range map[string]uint64{"2001::1": 6939, "2001:0:102:304::": 6939, "2002::1": 6939, "2002:102:304::1": 6939, "2001:200::1": 2500} {
		m, _ := lookupAny(t, out, ip)
		if got, _ := get(m, "autonomous_system_number").(uint64); got != asn {
			t.Errorf("%s: asn %v, want %d", ip, get(m, "autonomous_system_number"), asn)
		}
	}
	opts.IPv4Aliases = AliasOn
	_, err = Compile(filepath.Join(dir, "on.mmdb"), opts, []Source{src})
	var ce *AliasCollisionError
	var re *source.RowError
	if !errors.As(err, &ce) || !errors.As(err, &re) || re.Line != 1 || re.Column != 1 ||
		!strings.HasPrefix(err.Error(), base+":1:1: 2001::/32 has data in 2001::/32") {
		t.Fatalf("--ipv4-aliases on: %v", err)
	}
}

// TestAliasModes: what ::ffff:a.b.c.d, 2001:0:a.b.c.d (Teredo) and
// 2002:a.b.c.d (6to4) lookups return in each mode, as docs/mmdb.md says.
func TestAliasModes(t *testing.T) {
	dir := t.TempDir()
	sites := write(t, dir, "sites.csv", "network,site\n1.2.3.0/24,v4\n2001:db8::/32,v6\n")
	sixToFour := write(t, dir, "6to4.csv", "network,site\n2002::/16,relay\n2003::/16,other\n")
	src := func(p string) Source { return Source{Kind: CSVNetworks, Path: p, NetworkColumn: "network"} }
	build := func(mode AliasMode, srcs ...Source) (string, *Stats) {
		out := filepath.Join(dir, mode.String()+".mmdb")
		st, err := Compile(out, Options{IPv4Aliases: mode, BuildEpoch: 1700000000}, srcs)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		return out, st
	}
	site := func(path, ip string) string {
		m, _ := lookupAny(t, path, ip)
		if m == nil {
			return "not found"
		}
		s, _ := m["site"].(string)
		return s
	}
	probes := []string{"1.2.3.4", "::ffff:1.2.3.4", "2001:0:102:304::1", "2002:102:304::1", "2001:db8::1"}
	for _, c := range []struct {
		mode    AliasMode
		srcs    []Source
		aliases bool
		want    []string
	}{
		{AliasAuto, []Source{src(sites)}, true, []string{"v4", "v4", "v4", "v4", "v6"}},
		{AliasOn, []Source{src(sites)}, true, []string{"v4", "v4", "v4", "v4", "v6"}},
		{AliasOff, []Source{src(sites)}, false, []string{"v4", "not found", "not found", "not found", "v6"}},
		{AliasAuto, []Source{src(sites), src(sixToFour)}, false, []string{"v4", "not found", "not found", "relay", "v6"}},
	} {
		path, st := build(c.mode, c.srcs...)
		if st.IPv4Aliases != c.aliases || (len(aliasesOf(t, path)) == 3) != c.aliases {
			t.Errorf("%s with %d sources: aliases %v, file %v", c.mode, len(c.srcs), st.IPv4Aliases, aliasesOf(t, path))
		}
		for i, ip := range probes {
			if got := site(path, ip); got != c.want[i] {
				t.Errorf("%s with %d sources: %s -> %s, want %s", c.mode, len(c.srcs), ip, got, c.want[i])
			}
		}
	}
	// on with the colliding source: an error naming the row.
	_, err := Compile(filepath.Join(dir, "x.mmdb"), Options{IPv4Aliases: AliasOn, BuildEpoch: 1700000000},
		[]Source{src(sites), src(sixToFour)})
	if err == nil || !strings.HasPrefix(err.Error(), sixToFour+":2:1: 2002::/16 has data in 2002::/16") {
		t.Fatalf("on: %v", err)
	}
	// A row containing an alias network collides too (the writer would
	// drop the aliased part of it).
	wide := write(t, dir, "wide.csv", "network,site\n2000::/4,wide\n")
	path, st := build(AliasAuto, src(sites), src(wide))
	if st.IPv4Aliases || site(path, "2002:102:304::1") != "wide" || site(path, "::ffff:1.2.3.4") != "not found" {
		t.Errorf("containing row: aliases %v, 6to4 %s", st.IPv4Aliases, site(path, "2002:102:304::1"))
	}
	if _, err := Compile(filepath.Join(dir, "v4.mmdb"), Options{IPVersion: 4, IPv4Aliases: AliasOn}, []Source{src(sites)}); err == nil {
		t.Error("aliases on in an IPv4 file accepted")
	}
}
