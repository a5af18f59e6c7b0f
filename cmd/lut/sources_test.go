package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
	"github.com/lutkit/lutkit/internal/dbtest"
)

// diffRow is one row of the differential test; a nil city is NULL where
// the source has NULLs (JSON null or a missing field, YAML ~, SQL NULL)
// and empty in CSV.
type diffRow struct {
	key, name string
	city      *string
	n         int64
}

var diffColumns = []string{"key", "name", "city", "n"}

func diffRows(seed uint64, n int) []diffRow {
	rng := rand.New(rand.NewPCG(seed, 27))
	rows := make([]diffRow, n)
	for i := range rows {
		r := &rows[i]
		r.key = fmt.Sprintf("k%04d %s", i, sourcetest.RandomField(rng))
		r.name = sourcetest.RandomField(rng)
		if rng.IntN(4) > 0 {
			c := sourcetest.RandomField(rng)
			r.city = &c
		}
		r.n = rng.Int64() - rng.Int64()
	}
	return rows
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonObject writes the row as an object; with withKey its key is a
// field. A NULL city is null or, every other row, missing.
func (r diffRow) jsonObject(withKey bool, i int) string {
	var b strings.Builder
	b.WriteString("{")
	if withKey {
		b.WriteString(`"key": ` + jsonText(r.key) + ", ")
	}
	b.WriteString(`"name":` + jsonText(r.name))
	switch {
	case r.city != nil:
		b.WriteString(`, "city": ` + jsonText(*r.city))
	case i%2 == 0:
		b.WriteString(`, "city": null`)
	}
	fmt.Fprintf(&b, `, "n": %d}`, r.n)
	return b.String()
}

func writeDiffSources(t *testing.T, dir string, rows []diffRow) map[string]string {
	t.Helper()
	files := map[string]string{}
	put := func(name, data string) {
		files[name] = filepath.Join(dir, name)
		if err := os.WriteFile(files[name], []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var csvb bytes.Buffer
	w, err := source.NewWriter("csv", &csvb, diffColumns)
	if err != nil {
		t.Fatal(err)
	}
	var dict, array, ndjson strings.Builder
	dict.WriteString("{")
	array.WriteString("[")
	for i, r := range rows {
		city := ""
		if r.city != nil {
			city = *r.city
		}
		if err := w.Write([][]byte{[]byte(r.key), []byte(r.name), []byte(city), []byte(strconv.FormatInt(r.n, 10))}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			dict.WriteString(",\n")
			array.WriteString(",\n")
		}
		dict.WriteString(jsonText(r.key) + ": " + r.jsonObject(false, i))
		array.WriteString(r.jsonObject(true, i))
		ndjson.WriteString(r.jsonObject(true, i) + "\n")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dict.WriteString("}")
	array.WriteString("]")
	put("rows.csv", csvb.String())
	put("dict.json", dict.String())
	put("array.json", array.String())
	put("rows.ndjson", ndjson.String())

	str := func(s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	for _, r := range rows {
		v := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("name"), str(r.name)}}
		if r.city != nil {
			v.Content = append(v.Content, str("city"), str(*r.city))
		} else {
			v.Content = append(v.Content, str("city"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "~"})
		}
		v.Content = append(v.Content, str("n"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(r.n, 10)})
		doc.Content = append(doc.Content, str(r.key), v)
	}
	y, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	put("dict.yaml", string(y))

	files["rows.sqlite"] = filepath.Join(dir, "rows.sqlite")
	db, err := sql.Open("sqlite", files["rows.sqlite"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE rows (key TEXT, name TEXT, city TEXT, n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO rows VALUES (?, ?, ?, ?)`, r.key, r.name, r.city, r.n); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestSourcesAgree compiles the same rows (random text with quotes,
// delimiters, newlines and multi-byte characters, empty values and NULLs)
// from CSV, JSON (a dictionary and an array), NDJSON, YAML, SQLite,
// PostgreSQL and MariaDB: every table is byte-identical to the CSV one,
// and lut get answers every key with the row the test wrote.
func TestSourcesAgree(t *testing.T) {
	const seed = 2027
	rows := diffRows(seed, 400)
	dir := t.TempDir()
	files := writeDiffSources(t, dir, rows)
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(dbtest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	pg := dbtest.StartPostgres(t)
	pg.Exec(t, "", `CREATE TABLE diff_rows (ord int, key text, name text, city text, n bigint)`)
	pgRows := make([][]any, len(rows))
	for i, r := range rows {
		pgRows[i] = []any{i, r.key, r.name, r.city, r.n}
	}
	if _, err := pg.Conn(t).CopyFrom(context.Background(), pgx.Identifier{"diff_rows"}, []string{"ord", "key", "name", "city", "n"}, pgx.CopyFromRows(pgRows)); err != nil {
		t.Fatal(err)
	}
	my := dbtest.StartMariaDB(t)
	my.Exec(t, `CREATE TABLE diff_rows (ord INT PRIMARY KEY, key_ TEXT, name TEXT, city TEXT, n BIGINT)`)
	mydb := my.DB(t)
	for i, r := range rows {
		if _, err := mydb.Exec(`INSERT INTO diff_rows VALUES (?, ?, ?, ?, ?)`, i, r.key, r.name, r.city, r.n); err != nil {
			t.Fatal(err)
		}
	}

	// A wrong password fails the compile without showing it.
	badpw := filepath.Join(dir, "badpw")
	if err := os.WriteFile(badpw, []byte("Not-the-pw-31337\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--postgres", pg.URL, "--password-file", badpw, "--query", "SELECT 1 AS key"},
		{"--mysql", my.DSN, "--password-file", badpw, "--query", "SELECT 1 AS `key`"},
	} {
		_, errs, code := run(t, append([]string{"compile", "--key", "key", "--out", filepath.Join(dir, "x.lut")}, args...)...)
		if code == 0 || strings.Contains(errs, "Not-the-pw-31337") || !strings.Contains(errs, "@127.0.0.1:") {
			t.Errorf("lut compile %s with a wrong password: exit %d: %s", args[0], code, errs)
		}
	}

	compileArgs := map[string][]string{
		"csv":        {files["rows.csv"]},
		"json dict":  {files["dict.json"]},
		"json array": {files["array.json"]},
		"ndjson":     {files["rows.ndjson"]},
		"yaml":       {files["dict.yaml"]},
		"sqlite":     {files["rows.sqlite"]},
		"postgres":   {"--postgres", pg.URL, "--password-file", pwfile, "--query", "SELECT key, name, city, n FROM diff_rows ORDER BY ord"},
		"mysql":      {"--mysql", my.DSN, "--password-file", pwfile, "--query", "SELECT key_ AS `key`, name, city, n FROM diff_rows ORDER BY ord"},
	}
	keys := make([]string, len(rows))
	var want strings.Builder
	for i, r := range rows {
		keys[i] = r.key
		city := ""
		if r.city != nil {
			city = *r.city
		}
		b, _ := json.Marshal(map[string]string{"key": r.key, "name": r.name, "city": city, "n": strconv.FormatInt(r.n, 10)})
		want.Write(b)
		want.WriteByte('\n')
	}
	var csvBytes []byte
	for _, name := range []string{"csv", "json dict", "json array", "ndjson", "yaml", "sqlite", "postgres", "mysql"} {
		out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".lut")
		mustRun(t, append([]string{"compile", "--key", "key", "--out", out}, compileArgs[name]...)...)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if name == "csv" {
			csvBytes = b
		} else if !bytes.Equal(b, csvBytes) {
			t.Errorf("%s: the table differs from the CSV one (%d and %d bytes)", name, len(b), len(csvBytes))
		}
		got := mustRun(t, append([]string{"get", out}, keys...)...)
		// lut get writes the columns in table order; compare as objects.
		gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want.String(), "\n")
		if len(gotLines) != len(wantLines) {
			t.Fatalf("%s: lut get gave %d lines, want %d", name, len(gotLines), len(wantLines))
		}
		for i := range len(rows) {
			var g, w map[string]string
			if err := json.Unmarshal([]byte(gotLines[i]), &g); err != nil {
				t.Fatalf("%s: %v: %s", name, err, gotLines[i])
			}
			_ = json.Unmarshal([]byte(wantLines[i]), &w)
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%s: key %q: got %s, want %s", name, keys[i], gotLines[i], wantLines[i])
				break
			}
		}
	}

	// --source-types: the databases' bigint column n, and the JSON
	// documents' n (a JSON number in every row; city, a string or null,
	// stays text), is a number, as --column-type n=number makes it from
	// the CSV, byte for byte; and a source that declares no types (CSV) is
	// left as it is.
	typedCSV := filepath.Join(dir, "typed-csv.lut")
	mustRun(t, "compile", "--key", "key", "--column-type", "n=number", "--out", typedCSV, files["rows.csv"])
	typedBytes, err := os.ReadFile(typedCSV)
	if err != nil {
		t.Fatal(err)
	}
	plainCSV := filepath.Join(dir, "source-types-csv.lut")
	mustRun(t, "compile", "--key", "key", "--source-types", "--out", plainCSV, files["rows.csv"])
	if b, _ := os.ReadFile(plainCSV); !bytes.Equal(b, csvBytes) {
		t.Error("--source-types changed a CSV source's table")
	}
	for _, name := range []string{"postgres", "mysql", "json dict", "json array", "ndjson"} {
		out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+"-typed.lut")
		mustRun(t, append([]string{"compile", "--key", "key", "--source-types", "--out", out}, compileArgs[name]...)...)
		if b, _ := os.ReadFile(out); !bytes.Equal(b, typedBytes) {
			t.Errorf("%s --source-types: the table differs from the CSV one with --column-type n=number", name)
		}
		got := mustRun(t, "get", out, rows[0].key)
		if want := fmt.Sprintf(`"n":%d`, rows[0].n); !strings.Contains(got, want) {
			t.Errorf("%s --source-types: lut get %s, want %s in it", name, got, want)
		}
		// --column-type overrides: n back to text.
		mustRun(t, append([]string{"compile", "--key", "key", "--source-types", "--column-type", "n=text", "--out", out}, compileArgs[name]...)...)
		if b, _ := os.ReadFile(out); !bytes.Equal(b, csvBytes) {
			t.Errorf("%s --source-types --column-type n=text: the table differs from the untyped CSV one", name)
		}
	}
}
