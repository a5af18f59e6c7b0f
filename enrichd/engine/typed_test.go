package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/tables"
)

// typedCSV is a customers table whose price, active and tags columns are
// typed (typedTypes); row 3 has them empty.
const typedCSV = "Index,price,active,tags,Customer Id\n" +
	"1,1.5,true,\"{\"\"a\"\":[1,2]}\",C1\n" +
	"2,-3e2,false,[],\"C\"\"2\"\"\"\n" +
	"3,,,,C3\n"

var typedTypes = map[string]string{"price": "number", "active": "bool", "tags": "json"}

// typedWant is what the customer object of each row decodes to.
var typedWant = []map[string]any{
	{"Index": "1", "price": 1.5, "active": true, "tags": map[string]any{"a": []any{1.0, 2.0}}, "Customer Id": "C1"},
	{"Index": "2", "price": -300.0, "active": false, "tags": []any{}, "Customer Id": `C"2"`},
	{"Index": "3", "price": nil, "active": nil, "tags": nil, "Customer Id": "C3"},
}

// TestTypedColumns: the values of a table's number, bool and json columns
// are written unquoted (an empty one as null), by the fused programs
// (syslog events) and by the program itself (JSON events), for a whole
// row and for columns picked one by one; the text columns stay strings.
func TestTypedColumns(t *testing.T) {
	dir := t.TempDir()
	compileTyped(t, filepath.Join(dir, "customers.lut"), typedCSV)
	picked := []Rename{{"price", "price"}, {"active", "active"}, {"tags", "tags"}, {"Customer Id", "Customer Id"}, {"Index", "Index"}}
	for _, columns := range [][]Rename{nil, picked} {
		for _, f := range []Format{Syslog, JSON} {
			lines := encodeTyped(t, dir, f, columns, 3)
			if len(lines) != 3 {
				t.Fatalf("%d lines for 3 events", len(lines))
			}
			for i, l := range lines {
				c, _ := decode(t, l)["customer"].(map[string]any)
				if fmt.Sprint(c) != fmt.Sprint(typedWant[i]) {
					t.Errorf("format %d, columns %v: row %d: got %v, want %v: %s", f, columns != nil, i+1, c, typedWant[i], l)
				}
			}
			if !strings.Contains(lines[0], `"price":1.5`) || strings.Contains(lines[0], `"price":"1.5"`) {
				t.Errorf("format %d, columns %v: the price is not the number 1.5: %s", f, columns != nil, lines[0])
			}
		}
	}
}

// TestTypedColumnsDamaged: a typed value damaged in the file (a table
// loaded without verification) is written as a string, so that the line
// stays valid JSON; lut verify's check (reader.Table.Verify) reports it.
func TestTypedColumnsDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "customers.lut")
	compileTyped(t, path, typedCSV)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Row 1's values as FORMAT.md lays them out, concatenated.
	vals := []byte(`11.5true{"a":[1,2]}C1`)
	if bytes.Count(data, vals) != 1 {
		t.Fatal("row 1's values not found once in the file")
	}
	at := bytes.Index(data, vals)
	for _, c := range []struct {
		off  int
		b    byte
		want map[string]any
	}{
		{2, 'x', map[string]any{"price": "1x5", "active": true}},       // the number
		{4, 'T', map[string]any{"price": 1.5, "active": "True"}},       // the bool
		{16, '}', map[string]any{"price": 1.5, "tags": `{"a":[1,}]}`}}, // the JSON
	} {
		d := bytes.Clone(data)
		d[at+c.off] = c.b
		resum(t, d)
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		tb, err := reader.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.Verify(); err == nil || !strings.Contains(err.Error(), "not a") {
			t.Errorf("damage at %d: Verify: %v", c.off, err)
		}
		tb.Close()
		for _, f := range []Format{Syslog, JSON} {
			lines := encodeTyped(t, dir, f, nil, 2)
			cm, _ := decode(t, lines[0])["customer"].(map[string]any)
			for k, v := range c.want {
				if fmt.Sprint(cm[k]) != fmt.Sprint(v) {
					t.Errorf("damage at %d, format %d: %s = %v, want %v: %s", c.off, f, k, cm[k], v, lines[0])
				}
			}
			if c2, _ := decode(t, lines[1])["customer"].(map[string]any); fmt.Sprint(c2) != fmt.Sprint(typedWant[1]) {
				t.Errorf("damage at %d: row 2: %v", c.off, c2)
			}
		}
	}
}

// resum rewrites the checksums of table file d after a change to its
// DATA section (its section entry's, the section table's, the header's),
// as a writer with a bug would have written them.
func resum(t *testing.T, d []byte) {
	t.Helper()
	h, err := format.DecodeHeader(d, int64(len(d)))
	if err != nil {
		t.Fatal(err)
	}
	table := d[h.SectionsOff : h.SectionsOff+uint64(h.SectionCount)*format.SectionEntrySize]
	for i := 0; i < int(h.SectionCount); i++ {
		e := table[i*format.SectionEntrySize:]
		if binary.LittleEndian.Uint32(e) == format.SectionData {
			off, n := binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
			binary.LittleEndian.PutUint64(e[24:], xxh3.Hash(d[off:off+n]))
		}
	}
	h.SectionsSum = xxh3.Hash(table)
	h.Encode(d[:format.HeaderSize])
}

func compileTyped(t *testing.T, path, csv string) {
	t.Helper()
	src, err := source.NewCSVReader(strings.NewReader(csv), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, path, compile.Options{Key: []string{"Index"}, ColumnTypes: typedTypes}); err != nil {
		t.Fatal(err)
	}
}

// encodeTyped runs one event of format f for each customer 1 to n through
// a pipeline whose customer rule writes columns (nil: whole rows) of
// dir's customers table, opened without verification, and returns the
// output lines, each checked to be valid JSON.
func encodeTyped(t *testing.T, dir string, f Format, columns []Rename, n int) []string {
	t.Helper()
	linkMMDB(t, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	p, err := New(testRules(columns), testOptions, set)
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{Format: f}
	for i := 1; i <= n; i++ {
		if f == JSON {
			b.Add(fmt.Appendf(nil, `{"cust":"%d","src":"10.0.0.1"}`, i), 0)
		} else {
			b.Add([]byte(event(i, i, "10.0.0.1")), 0)
		}
	}
	out := p.NewWorker(512).process(b, nil, time.Unix(0, 0))
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("invalid JSON line: %s", l)
		}
	}
	return lines
}
