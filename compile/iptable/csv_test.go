package iptable

import (
	"bytes"
	"compress/gzip"
	"errors"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// TestCSVDialect: IP sources are read by compile/source's CSV reader, the
// one .lut sources go through: quoted fields with delimiters and
// newlines, a byte order mark, gzip found by its magic bytes, and its
// *source.RowError, positioned at file:line:column, for a bad record.
func TestCSVDialect(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte("\xEF\xBB\xBFcidr,org\n10.0.0.0/8,\"Acme, Inc.\nHQ\"\n\n11.0.0.0/8,\"say \"\"hi\"\"\"\n")); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	p := write(t, dir, "orgs.dat", gz.String())
	out := filepath.Join(dir, "o.mmdb")
	if _, err := Compile(out, Options{BuildEpoch: 1}, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr"}}); err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]string{"10.1.2.3": "Acme, Inc.\nHQ", "11.0.0.1": `say "hi"`} {
		if m, _ := lookupAny(t, out, ip); get(m, "org") != want {
			t.Errorf("%s: %v, want %q", ip, m, want)
		}
	}
	for body, want := range map[string]string{
		"cidr,org\n10.0.0.0/8,\"x\"y\n":  "bad.csv:2:12: extraneous character after closing quote",
		"cidr,org\n10.0.0.0/8,caf\xe9\n": "bad.csv:2:12: invalid UTF-8 in field 2",
	} {
		p := write(t, dir, "bad.csv", body)
		_, err := Compile(filepath.Join(dir, "bad.mmdb"), Options{BuildEpoch: 1}, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr"}})
		var re *source.RowError
		if !errors.As(err, &re) || err.Error() != filepath.Join(dir, want) {
			t.Errorf("%q: err = %v, want %s", body, err, want)
		}
	}
}

// TestTSVAndQuoting: a .tsv (or .tab) source is read with tabs, as .lut
// sources are, and Quote "none" reads a field that starts with a quote as
// text; with CSV's quoting (the default) it is a quoted field.
func TestTSVAndQuoting(t *testing.T) {
	dir := t.TempDir()
	body := "cidr\torg\n10.0.0.0/8\t\"hq\" west\n11.0.0.0/8\tsay \"hi\"\n"
	for _, name := range []string{"orgs.tsv", "orgs.tab", "orgs.TSV"} {
		p := write(t, dir, name, body)
		out := filepath.Join(dir, name+".mmdb")
		if _, err := Compile(out, Options{BuildEpoch: 1}, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr", Quote: source.QuoteNone}}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for ip, want := range map[string]string{"10.1.2.3": `"hq" west`, "11.0.0.1": `say "hi"`} {
			if m, _ := lookupAny(t, out, ip); get(m, "org") != want {
				t.Errorf("%s %s: %v, want %q", name, ip, m, want)
			}
		}
	}
	p := write(t, dir, "quoted.tsv", body)
	_, err := Compile(filepath.Join(dir, "quoted.mmdb"), Options{BuildEpoch: 1}, []Source{{Kind: CSVNetworks, Path: p, NetworkColumn: "cidr"}})
	var re *source.RowError
	if !errors.As(err, &re) || err.Error() != p+":2:12: extraneous character after closing quote" {
		t.Errorf("CSV quoting: %v", err)
	}
}
