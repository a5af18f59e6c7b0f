package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/sample"
)

// sparseLookup returns rsyslog's lookup of a sparseArray table: the value
// of the largest index at or below key, nomatch below the first.
func sparseLookup(t *testing.T, table []byte) func(key int64) string {
	t.Helper()
	var lt struct {
		Nomatch string `json:"nomatch"`
		Type    string `json:"type"`
		Table   []struct {
			Index int64  `json:"index"`
			Value string `json:"value"`
		} `json:"table"`
	}
	if err := json.Unmarshal(table, &lt); err != nil {
		t.Fatal(err)
	}
	if lt.Type != "sparseArray" {
		t.Fatalf("type %q", lt.Type)
	}
	return func(key int64) string {
		i := sort.Search(len(lt.Table), func(i int) bool { return lt.Table[i].Index > key })
		if i == 0 {
			return lt.Nomatch
		}
		return lt.Table[i-1].Value
	}
}

// ip42num is rsyslog's ip42num(): the IPv4 address as a number, -1 for
// anything else.
func ip42num(a netip.Addr) int64 {
	if !a.Is4() {
		return -1
	}
	b := a.As4()
	return int64(b[0])<<24 | int64(b[1])<<16 | int64(b[2])<<8 | int64(b[3])
}

func readCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAssetSparseArray: for the events' addresses, the sparseArray table
// looked up as rsyslog does gives the site and zone of the sites table's
// network holding the address (sample.SiteOf), MISS for a public or an
// IPv6 address; and a table with gaps between its networks gives MISS in
// the gaps.
func TestAssetSparseArray(t *testing.T) {
	for _, n := range []int{sample.MaxSites, 64} {
		var sites bytes.Buffer
		if err := sample.WriteSites(&sites, n, 1); err != nil {
			t.Fatal(err)
		}
		var table bytes.Buffer
		if err := assetSparseArray(&table, readCSV(t, sites.Bytes())[1:]); err != nil {
			t.Fatal(err)
		}
		o := sample.EventOptions{Seed: 7, Customers: 100, Internal: 50, IPv6: 10, Sites: 64}
		if err := o.Check(); err != nil {
			t.Fatal(err)
		}
		lookup := sparseLookup(t, table.Bytes())
		hits, v6, public := 0, 0, 0
		for i := range 5000 {
			a := o.Event(i).Src
			got := lookup(ip42num(a))
			want := "MISS"
			if s, ok := sample.SiteOf(n, a); ok && a.Is4() {
				site := sample.NewSite(1, n, s)
				want = site.Name + "|" + site.Zone
				hits++
			} else if a.Is6() {
				v6++
			} else {
				public++
			}
			if got != want {
				t.Fatalf("%d sites: %v: got %q, want %q", n, a, got, want)
			}
		}
		if hits == 0 || v6 == 0 || public == 0 {
			t.Fatalf("%d sites: hits %d, IPv6 %d, public %d: each must occur", n, hits, v6, public)
		}
	}
	gaps := [][]string{
		{"10.0.1.0/24", "b", "", "", "office"},
		{"10.0.0.0/24", "a", "", "", "lab"},
		{"10.0.3.0/24", "c", "", "", "dmz"},
	}
	var table bytes.Buffer
	if err := assetSparseArray(&table, gaps); err != nil {
		t.Fatal(err)
	}
	lookup := sparseLookup(t, table.Bytes())
	for addr, want := range map[string]string{
		"9.255.255.255": "MISS", "10.0.0.0": "a|lab", "10.0.0.255": "a|lab", "10.0.1.7": "b|office",
		"10.0.2.1": "MISS", "10.0.3.255": "c|dmz", "10.0.4.0": "MISS", "200.1.1.1": "MISS",
	} {
		if got := lookup(ip42num(netip.MustParseAddr(addr))); got != want {
			t.Errorf("%s: got %q, want %q", addr, got, want)
		}
	}
	overlap := [][]string{{"10.0.0.0/16", "a", "", "", "lab"}, {"10.0.1.0/24", "b", "", "", "lab"}}
	if err := assetSparseArray(&bytes.Buffer{}, overlap); err == nil {
		t.Error("overlapping networks: no error")
	}
}

// TestIoCTables: every listed domain is in rsyslog's string table with
// "threat|source" and in add-contextual-data's CSV with both names, values
// as written (a value with $ doubled), and the MISS selector first.
func TestIoCTables(t *testing.T) {
	var list bytes.Buffer
	if err := sample.WriteDomains(&list, 500, 1); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, list.Bytes())[1:]
	rows = append(rows, []string{"odd$name.example", "c2", "a$b"})
	var js bytes.Buffer
	if err := iocStringTable(&js, rows); err != nil {
		t.Fatal(err)
	}
	var lt struct {
		Nomatch, Type string
		Table         []struct{ Index, Value string }
	}
	if err := json.Unmarshal(js.Bytes(), &lt); err != nil {
		t.Fatal(err)
	}
	if lt.Type != "string" || lt.Nomatch != "MISS" || len(lt.Table) != len(rows) {
		t.Fatalf("type %q nomatch %q, %d entries for %d rows", lt.Type, lt.Nomatch, len(lt.Table), len(rows))
	}
	for i, r := range rows {
		if e := lt.Table[i]; e.Index != r[0] || e.Value != r[1]+"|"+r[2] {
			t.Fatalf("entry %d: %+v for row %q", i, e, r)
		}
	}
	var ctx bytes.Buffer
	if err := iocContextCSV(&ctx, rows); err != nil {
		t.Fatal(err)
	}
	got := readCSV(t, ctx.Bytes())
	if strings.Join(got[0], ",") != "MISS,threat,MISS" || len(got) != 1+2*len(rows) {
		t.Fatalf("first row %q, %d rows for %d domains", got[0], len(got), len(rows))
	}
	for i, r := range rows {
		th, src := got[1+2*i], got[2+2*i]
		if th[0] != r[0] || th[1] != "threat" || th[2] != sngLiteral(r[1]) ||
			src[0] != r[0] || src[1] != "source" || src[2] != sngLiteral(r[2]) {
			t.Fatalf("domain %q: %q %q", r[0], th, src)
		}
	}
	if last := got[len(got)-1]; last[2] != "a$$b" {
		t.Errorf("a $ in a value: %q, want a$$b", last[2])
	}
}
