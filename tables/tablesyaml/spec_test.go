package tablesyaml

import (
	"encoding/json"
	"testing"
)

// TestTablesYAMLDecodesTheSpecs: a table's keys are the json names of the
// compilers' own specs, and decode to the values those specs serialise.
func TestTablesYAMLDecodesTheSpecs(t *testing.T) {
	cfg, err := ParseConfig("/cfg/tables.yaml", []byte(`tables:
  - name: l
    key: [host, port]
    columns: [host, port, owner]
    fold_case: true
    on_duplicate: last
    skip_bad_rows: true
    sources:
      - path: s.tsv
        format: tsv
        delimiter: '\t'
        quote: none
        header: [host, port, owner]
  - name: m
    kind: mmdb
    profile: City
    database_type: Acme-City
    description: sites
    languages: [en, de]
    ip_version: 6
    record_size: 32
    custom_key: acme
    default_location: [52.5, 13.4]
    ipv4_aliases: "off"
    sources:
      - path: r.csv
        start_column: s
        end_column: e
        columns: [s, e, site]
        delimiter: ";"
        quote: csv
        family: 4
        fields: ["city.names.en=site", "x:uint32=n"]
        set: ["threat.ioc:bool=true"]
        merge: top-level
      - base.mmdb
`))
	if err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	l, m := cfg.Tables[0], cfg.Tables[1]
	for _, c := range []struct{ got, want string }{
		{js(l.LUT), `{"key":["host","port"],"columns":["host","port","owner"],"fold_case":true,"on_duplicate":"last","skip_bad_rows":true}`},
		{js(l.Sources[0].LUT), `{"format":"tsv","delimiter":"\\t","quote":"none","header":["host","port","owner"]}`},
		{js(m.MMDB), `{"profile":"city","database_type":"Acme-City","description":"sites","languages":["en","de"],"ip_version":6,"record_size":32,"custom_key":"acme","ipv4_aliases":"off","default_location":[52.5,13.4]}`},
		{js(m.Sources[0].MMDB), `{"path":"r.csv","type":"ranges","columns":["s","e","site"],"delimiter":";","quote":"csv","start_column":"s","end_column":"e","family":4,"fields":["city.names.en=site","x:uint32=n"],"set":["threat.ioc:boolean=true"],"merge":"top"}`},
		{js(m.Sources[1].MMDB), `{"path":"base.mmdb","type":"mmdb"}`},
	} {
		if c.got != c.want {
			t.Errorf("decoded\n%s\nwant\n%s", c.got, c.want)
		}
	}
	if m.Sources[1].Resolved != "/cfg/base.mmdb" || l.Sources[0].Path != "s.tsv" {
		t.Errorf("paths %+v %+v", m.Sources[1], l.Sources[0])
	}
}
