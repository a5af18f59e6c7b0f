package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestColumnTypes: --column-type makes a number a number and a bool a
// bool in lut get's output, the same rows from CSV and from a JSON array
// compile to the same bytes, a value that is not of its column's type
// fails the compile at its file:line:column, inspect shows the types as
// the flag takes them, verify passes, and export then compile with those
// types gives the table back byte for byte.
func TestColumnTypes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string { return writeTemp(t, dir, name, s) }
	csvPath := write("rows.csv", "sku,price,active,tags,name\n"+
		"a1,1.5,true,\"[1,\"\"x\"\"]\",ann\n"+
		"b2,-20e3,false,{},\"bob \"\"the\"\" 2\"\n"+
		"c3,,,,0\n")
	jsonPath := write("rows.json", `[
 {"sku": "a1", "price": 1.5, "active": true, "tags": "[1,\"x\"]", "name": "ann"},
 {"sku": "b2", "price": -20e3, "active": false, "tags": "{}", "name": "bob \"the\" 2"},
 {"sku": "c3", "price": "", "active": "", "tags": "", "name": "0"}
]`)
	types := "price=number,active=bool,tags=json"
	csvLut, jsonLut := filepath.Join(dir, "csv.lut"), filepath.Join(dir, "json.lut")
	mustRun(t, "compile", "--key", "sku", "--column-type", types, "--out", csvLut, csvPath)
	mustRun(t, "compile", "--key", "sku", "--column-type", types, "--out", jsonLut, jsonPath)
	a, b := readFile(t, csvLut), readFile(t, jsonLut)
	if !bytes.Equal(a, b) {
		t.Errorf("the JSON source's table differs from the CSV one (%d and %d bytes)", len(b), len(a))
	}

	got := mustRun(t, "get", csvLut, "a1", "b2", "c3")
	want := `{"sku":"a1","price":1.5,"active":true,"tags":[1,"x"],"name":"ann"}` + "\n" +
		`{"sku":"b2","price":-20e3,"active":false,"tags":{},"name":"bob \"the\" 2"}` + "\n" +
		`{"sku":"c3","price":null,"active":null,"tags":null,"name":"0"}` + "\n"
	if got != want {
		t.Errorf("lut get:\n got %s\nwant %s", got, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("lut get wrote invalid JSON: %v: %s", err, l)
		}
	}

	// A text table is written as before: every value a string.
	textLut := filepath.Join(dir, "text.lut")
	mustRun(t, "compile", "--key", "sku", "--out", textLut, csvPath)
	if got := mustRun(t, "get", textLut, "a1"); got != `{"sku":"a1","price":"1.5","active":"true","tags":"[1,\"x\"]","name":"ann"}`+"\n" {
		t.Errorf("lut get of the text table: %s", got)
	}
	if v := mustRun(t, "inspect", "--json", textLut); strings.Contains(v, "column_types") || !strings.Contains(v, `"version": "1.0"`) {
		t.Errorf("inspect of a text table: %s", v)
	}

	// inspect gives the types, as the flag takes them.
	info := mustRun(t, "inspect", csvLut)
	if !strings.Contains(info, "--column-type active=bool,price=number,tags=json") && !strings.Contains(info, "--column-type price=number,active=bool,tags=json") {
		t.Errorf("inspect does not show the column types: %s", info)
	}
	var ij struct {
		Version     string            `json:"version"`
		ColumnTypes map[string]string `json:"column_types"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", csvLut)), &ij); err != nil {
		t.Fatal(err)
	}
	if ij.Version != "1.1" || len(ij.ColumnTypes) != 3 || ij.ColumnTypes["price"] != "number" || ij.ColumnTypes["active"] != "bool" || ij.ColumnTypes["tags"] != "json" {
		t.Errorf("inspect --json: %+v", ij)
	}
	mustRun(t, "verify", csvLut)

	// Export, then compile with the types inspect gave: the same bytes.
	exported := filepath.Join(dir, "exported.csv")
	mustRun(t, "export", csvLut, "-o", exported)
	var flag []string
	for c, ty := range ij.ColumnTypes {
		flag = append(flag, c+"="+ty)
	}
	again := filepath.Join(dir, "again.lut")
	mustRun(t, "compile", "--key", "sku", "--column-type", strings.Join(flag, ","), "--out", again, exported)
	if !bytes.Equal(readFile(t, again), a) {
		t.Errorf("export then compile with --column-type %s does not give the table back", strings.Join(flag, ","))
	}

	// A value that is not of its column's type fails at its place.
	for _, c := range []struct{ csv, want string }{
		{"sku,price\na,1\nb,1.5x\n", "bad.csv:3:3: "},
		{"sku,price\na,01\n", "bad.csv:2:3: "},
		{"sku,active\na,yes\n", "bad.csv:2:3: "},
		{"sku,name,tags\na,x,\"{\"\"a\"\":\"\n", "bad.csv:2:5: "},
	} {
		bad := write("bad.csv", c.csv)
		cols := strings.Split(strings.SplitN(c.csv, "\n", 2)[0], ",")
		ty := map[string]string{"price": "number", "active": "bool", "tags": "json"}[cols[len(cols)-1]]
		_, errs, code := run(t, "compile", "--key", "sku", "--column-type", cols[len(cols)-1]+"="+ty, "--out", filepath.Join(dir, "bad.lut"), bad)
		if code == 0 || !strings.Contains(errs, c.want) || !strings.Contains(errs, "type "+ty) {
			t.Errorf("%q: exit %d, want an error at %q: %s", c.csv, code, c.want, errs)
		}
	}
	// An unknown type or column is a usage error.
	if _, errs, code := run(t, "compile", "--key", "sku", "--column-type", "price=float", "--out", filepath.Join(dir, "x.lut"), csvPath); code == 0 || !strings.Contains(errs, "float") {
		t.Errorf("--column-type price=float: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, "compile", "--key", "sku", "--column-type", "cost=number", "--out", filepath.Join(dir, "x.lut"), csvPath); code == 0 || !strings.Contains(errs, "cost") {
		t.Errorf("--column-type cost=number: exit %d: %s", code, errs)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
