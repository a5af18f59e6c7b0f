package iptable

import (
	"encoding/json"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	o := Options{Profile: "town", IPVersion: 5, RecordSize: 30, CustomKey: "a.b", BuildEpoch: -1}
	want := `profile: unknown profile "town" (want city, asn or custom)
ip_version: must be 4 or 6, not 5
record_size: must be 24, 28 or 32, not 30
custom_key: "a.b" must not contain a dot
build_epoch: must be positive, not -1`
	if err := o.Validate(); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if err := (&Options{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
	if err := (&Options{IPVersion: 4, IPv4Aliases: AliasOn}).Validate(); err == nil || err.Error() != "ipv4_aliases: IPv4 aliases exist only in IPv6 files (ip version 6)" {
		t.Errorf("aliases in an IPv4 file: %v", err)
	}
	var m AliasMode
	if err := m.UnmarshalText([]byte("OFF")); err != nil || m != AliasOff {
		t.Errorf("alias mode %v %v", m, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	d, err := Options{Profile: "City"}.withDefaults()
	if err != nil || d.Profile != ProfileCity || d.DatabaseType != "Lutkit-City" || d.IPVersion != 6 || d.RecordSize != 28 ||
		d.CustomKey != "x_internal" || d.BuildEpoch != 1700000000 || len(d.Languages) != 1 || d.Description != "lutkit city database" {
		t.Errorf("defaults %+v %v", d, err)
	}
}

func TestSourceValidate(t *testing.T) {
	for _, c := range []struct {
		src  Source
		want string
	}{
		{Source{Kind: CSVRanges, Path: "r.csv", StartColumn: "s"}, "a ranges source needs start_column and end_column"},
		{Source{Kind: CSVNetworks, Path: "n.csv"}, "network_column: missing: a networks source needs the CIDR column"},
		{Source{Kind: List, Path: "l.txt", Family: 5}, "family: must be 4 or 6, not 5"},
		{Source{Kind: List, Path: "l.txt", Delimiter: '"'}, `delimiter: invalid delimiter '"'`},
		{Source{Kind: List, Path: "l.txt", Quote: "double"}, `quote: unknown quoting "double" (want csv or none)`},
		{Source{Kind: Base}, "path: missing"},
		{Source{Kind: SourceKind(9), Path: "x"}, "type: unknown source type 9"},
	} {
		if err := c.src.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %s", c.src, err, c.want)
		}
	}
	if err := (&Source{Kind: CSVRanges, Path: "r.csv", StartColumn: "s", EndColumn: "e", Family: 6}).Validate(); err != nil {
		t.Errorf("valid source: %v", err)
	}
	for want, src := range map[SourceKind]Source{
		CSVRanges: {EndColumn: "e"}, CSVNetworks: {NetworkColumn: "n"}, Base: {Path: "x.MMDB"}, List: {Path: "x.txt"},
	} {
		if got := src.GuessKind(); got != want {
			t.Errorf("%+v: guessed %s, want %s", src, got, want)
		}
	}
}

// TestSourceSpecText: a source serialises with the names tables.yaml
// uses, its typed values as text, and reads back the same.
func TestSourceSpecText(t *testing.T) {
	src := Source{Kind: CSVNetworks, Path: "n.csv", NetworkColumn: "cidr", Delimiter: ';', Family: 4, Merge: MergeDeep,
		Fields: []Field{{Path: "city.names.en", Column: "site"}, {Path: "asn", Type: TypeUint32, Column: "as"}},
		Set:    []Constant{{Path: "threat.ioc", Type: TypeBoolean, Value: "true"}}}
	b, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"path":"n.csv","type":"networks","delimiter":";","network_column":"cidr","family":4,` +
		`"fields":["city.names.en=site","asn:uint32=as"],"set":["threat.ioc:boolean=true"],"merge":"deep"}`
	if string(b) != want {
		t.Errorf("json\n%s\nwant\n%s", b, want)
	}
	var back Source
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b2) != want {
		t.Errorf("round trip\n%s", b2)
	}
	var k SourceKind
	if err := k.UnmarshalText([]byte("sideways")); err == nil {
		t.Error("unknown type accepted")
	}
	var p Profile
	if err := p.UnmarshalText([]byte("ASN")); err != nil || p != ProfileASN {
		t.Errorf("profile %q %v", p, err)
	}
	o, _ := json.Marshal(Options{Profile: ProfileCity, RecordSize: 24, BuildEpoch: 5, DefaultLocation: &[2]float64{1, 2}})
	if string(o) != `{"profile":"city","record_size":24,"default_location":[1,2]}` {
		t.Errorf("options json %s", o)
	}
}
