package main

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// compileExit runs lut compile on a file named name holding content and
// checks the exit status and that stderr holds want (the file's path
// stands for "FILE").
func compileExit(t *testing.T, name, content string, args []string, code int, want string) string {
	t.Helper()
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, name), content)
	out := filepath.Join(dir, "t.lut")
	args = slices.Clone(args)
	for i, a := range args {
		if a == "OUT" {
			args[i] = filepath.Join(dir, "t.mmdb")
			out = args[i]
		}
	}
	if !strings.Contains(strings.Join(args, " "), "--out") {
		args = append(args, "--out", out)
	}
	_, stderr, got := run(t, append(append([]string{"compile"}, args...), src)...)
	want = strings.ReplaceAll(want, "FILE", src)
	if got != code || !strings.Contains(stderr, want) {
		t.Errorf("compile %s %q: exit %d, stderr %q; want exit %d and %q", name, content, got, stderr, code, want)
	}
	if code != 0 {
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a failed compile left %s", out)
		}
	}
	return stderr
}

// TestCompileDocumentErrorExit: a syntax error in a JSON or YAML
// document is a data error at its file:line:column, exit status 1, as a
// bad CSV row is; it ends the document, so --skip-bad-rows does not skip
// it.
func TestCompileDocumentErrorExit(t *testing.T) {
	trail := "[\n{\"id\":1,\"n\":\"a\"},\n{\"id\":2,\"n\":\"b\",}\n]\n"
	for _, args := range [][]string{{"--key", "id"}, {"--key", "id", "--skip-bad-rows"}, {"--key", "id", "--header", "id,n"}} {
		compileExit(t, "trail.json", trail, args, 1, "FILE:3:17: invalid character '}' looking for beginning of object key string")
	}
	compileExit(t, "second.yaml", "a: 1\n---\nb: 2\n", []string{"--key", "key"}, 1, "FILE:2:1: a second document; a YAML source holds one")
	compileExit(t, "scalar.json", ` "x"`, []string{"--key", "key"}, 1, "FILE:1:2: the document is a string")
}

// TestCompileHeaderErrorExit: a CSV header that repeats a name, or is
// blank, is a data error at line 1 (and the repeated name's field), exit
// status 1.
func TestCompileHeaderErrorExit(t *testing.T) {
	compileExit(t, "duph.csv", "id,n,n\n1,a,b\n", []string{"--key", "id"}, 1, `FILE:1:6: duplicate column name "n" (columns 2 and 3)`)
	compileExit(t, "blank.csv", "\n1,a\n", []string{"--key", "id"}, 1, "FILE:1: empty header")
	// A --header that repeats a name is a usage error.
	compileExit(t, "noh.csv", "1,a\n", []string{"--key", "id", "--header", "id,id"}, 2, `duplicate column name "id"`)
}

// TestCompileMMDBRowErrorExit: a bad row of an MMDB CSV source is a data
// error at its file:line:column, exit status 1, as it is for a .lut
// table; a ragged row is placed at its first field too many, or where
// the first one missing would start.
func TestCompileMMDBRowErrorExit(t *testing.T) {
	mmdb := []string{"--network", "network", "--out", "OUT"}
	compileExit(t, "badnet.csv", "network,n\n1.0.0.0/8,a\nnot-a-net,b\n", mmdb, 1, `FILE:3:1: "not-a-net" is not an address`)
	compileExit(t, "ragnet.csv", "network,n\n1.0.0.0/8,a\n2.0.0.0/8,b,c\n", mmdb, 1, "FILE:3:13: 3 fields, want 2")
	compileExit(t, "shortnet.csv", "network,n\n1.0.0.0/8,a\n2.0.0.0/8\n", mmdb, 1, "FILE:3:10: 1 fields, want 2")
	compileExit(t, "ioc.csv", "network,n\n1.0.0.0/8,a\n", []string{"--network", "network", "--out", "OUT", "--ioc", "missing.txt"}, 2, "missing.txt")
	// A range bound that is neither an address nor an integer is named
	// at its own column, whatever the other bound is; an integer beside
	// an address is said to be one.
	ranges := []string{"--range", "start,end", "--out", "OUT"}
	// A file without a header row, given without --columns, is told how
	// to name its columns.
	compileExit(t, "nohead.csv", "1.2.3.0/24,a\n", mmdb, 2,
		`FILE:1: no column "network" for the network in the first row, read as the header (1.2.3.0/24, a): name the columns of a file without a header row with --columns`)
	compileExit(t, "badend.csv", "start,end,n\n16777216,oops,a\n", ranges, 1, `FILE:2:10: range end "oops" is not an address or integer`)
	compileExit(t, "badstart.csv", "start,end,n\noops,16777216,a\n", ranges, 1, `FILE:2:1: range start "oops" is not an address or integer`)
	compileExit(t, "mixend.csv", "start,end,n\n1.0.0.0,16777471,a\n", ranges, 1,
		"FILE:2:9: range end 16777471 is an integer and the start 1.0.0.0 an address: give both bounds as addresses or both as integers")
	compileExit(t, "mixstart.csv", "start,end,n\n16777216,1.0.0.255,a\n", ranges, 1,
		"FILE:2:1: range start 16777216 is an integer and the end 1.0.0.255 an address: give both bounds as addresses or both as integers")
}

// TestCompileNDJSONBadLine: an NDJSON line that is not one object is a
// bad row at its own line, exit status 1, which --skip-bad-rows skips.
func TestCompileNDJSONBadLine(t *testing.T) {
	nd := "{\"id\":1,\"n\":\"a\"}\n{\"id\":2,\"n\":\"b\"\n{\"id\":3,\"n\":\"c\"}\n"
	compileExit(t, "nd.ndjson", nd, []string{"--key", "id"}, 1, "FILE:2:16: unexpected EOF")
	stderr := compileExit(t, "nd.ndjson", nd, []string{"--key", "id", "--skip-bad-rows"}, 0, "FILE:2:16: unexpected EOF")
	if !strings.Contains(stderr, "compiled") || !strings.Contains(stderr, ": 2 rows") || !strings.Contains(stderr, "1 bad rows skipped") {
		t.Errorf("--skip-bad-rows: %s", stderr)
	}
}

// TestCompileYAMLErrorLine: a YAML syntax error names its own line (the
// open '[' here, where the library named the line before it), exit
// status 1.
func TestCompileYAMLErrorLine(t *testing.T) {
	compileExit(t, "yl4.yaml", "- id: 1\n  n: a\n- id: 2\n  n: [1, 2\n", []string{"--key", "id"}, 1, "FILE:4: did not find expected ',' or ']'")
}

// TestCompileValueErrorColumn: an error about a value is at the byte
// column where its field starts in CSV (after "café,": 7) and at its
// field number in NDJSON, whose reader places only its own errors.
func TestCompileValueErrorColumn(t *testing.T) {
	args := []string{"--key", "id", "--column-type", "price=number"}
	compileExit(t, "p.csv", "id,price\na,1\ncafé,1.5x\n", args, 1, `FILE:3:7: column "price" is of type number: "1.5x"`)
	compileExit(t, "p.ndjson", "{\"id\":\"a\",\"price\":\"1\"}\n{\"id\":\"café\",\"price\":\"1.5x\"}\n", args, 1,
		`FILE:2:2: column "price" is of type number: "1.5x"`)
}

// TestCompileJSONInvalidUTF8: invalid UTF-8 in JSON fails the compile at
// the byte, exit status 1 (it was read as U+FFFD); --skip-bad-rows skips
// an NDJSON line holding it, but a JSON document fails as a whole.
func TestCompileJSONInvalidUTF8(t *testing.T) {
	nd := "{\"id\":1,\"n\":\"\xff\"}\n{\"id\":2,\"n\":\"b\"}\n"
	compileExit(t, "badutf.ndjson", nd, []string{"--key", "id"}, 1, `FILE:1:14: invalid UTF-8 in field "n"`)
	stderr := compileExit(t, "badutf.ndjson", nd, []string{"--key", "id", "--skip-bad-rows"}, 0, `FILE:1:14: invalid UTF-8 in field "n"`)
	if !strings.Contains(stderr, ": 1 rows") || !strings.Contains(stderr, "1 bad rows skipped") {
		t.Errorf("--skip-bad-rows: %s", stderr)
	}
	doc := "[{\"id\":1,\"n\":\"a\"},\n {\"id\":2,\"n\":\"\xff\"}]"
	compileExit(t, "badutf.json", doc, []string{"--key", "id"}, 1, `FILE:2:15: invalid UTF-8 in field "n"`)
	compileExit(t, "badutf.json", doc, []string{"--key", "id", "--skip-bad-rows"}, 1, `FILE:2:15: invalid UTF-8 in field "n"`)
}

// TestCompileYAMLInvalidUTF8: invalid UTF-8 in YAML fails the compile at
// the byte, exit status 1, where the library named no line; a YAML
// document fails as a whole, with --skip-bad-rows too.
func TestCompileYAMLInvalidUTF8(t *testing.T) {
	doc := "- id: 1\n  n: a\n- id: 2\n  n: \xff\n"
	compileExit(t, "badutf.yaml", doc, []string{"--key", "id"}, 1, "FILE:4:6: invalid UTF-8")
	compileExit(t, "badutf.yaml", doc, []string{"--key", "id", "--skip-bad-rows"}, 1, "FILE:4:6: invalid UTF-8")
}

// TestCompileSQLiteNotUTF8: a SQLite TEXT value with invalid UTF-8, or a
// BLOB of binary data, is a bad row naming the table, row and column,
// exit status 1 (it compiled, the bytes as they were).
func TestCompileSQLiteNotUTF8(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inv.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE assets (id INTEGER, n TEXT, raw BLOB)`,
		`INSERT INTO assets VALUES (1, 'a', NULL), (2, CAST(x'ff' AS TEXT), NULL), (3, 'c', x'ff00626c6f62')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out := filepath.Join(dir, "t.lut")
	_, stderr, code := run(t, "compile", "--key", "id", "--out", out, path)
	if code != 1 || !strings.Contains(stderr, path+`:2:2: invalid UTF-8 in column "n" of table "assets", row 2`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	_, stderr, code = run(t, "compile", "--key", "id", "--skip-bad-rows", "--out", out, path)
	if code != 0 || !strings.Contains(stderr, path+`:3:3: BLOB in column "raw" of table "assets", row 3, is not UTF-8 text`) || !strings.Contains(stderr, "2 bad rows skipped") {
		t.Errorf("--skip-bad-rows: exit %d: %s", code, stderr)
	}
}

// TestCompileDamagedFileExit: a file that cannot be read as its format,
// or is damaged where no row is at fault, exits 2 as an I/O error does,
// whether the damage is found opening it (a Parquet footer) or reading
// it (a Parquet page, a gzip stream cut short); the damaged page exited 1.
func TestCompileDamagedFileExit(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	var b strings.Builder
	b.WriteString("id,name,city\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "%d,name %d,city %d\n", i, i, i%7)
	}
	writeFile(t, csv, b.String())
	table := filepath.Join(dir, "t.lut")
	mustRun(t, "compile", "--key", "id", "--out", table, csv)
	good := filepath.Join(dir, "good.parquet")
	mustRun(t, "export", table, "--format", "parquet", "--out", good)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.lut")
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"footer.parquet", func(d []byte) []byte { return append(d[:len(d)-12:len(d)-12], d[len(d)-8:]...) }, "footer.parquet: "},
		{"page.parquet", func(d []byte) []byte {
			for i := 4; i < 64; i++ {
				d[i] = 0xff
			}
			return d
		}, `page.parquet: corrupt Parquet page in column "id" of row group 1 of 1 (rows 1-5000): `},
		{"cut.csv.gz", func([]byte) []byte {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			if _, err := zw.Write([]byte(b.String())); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			return z.Bytes()[:z.Len()/2]
		}, "cut.csv.gz: unexpected EOF"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.damage(bytes.Clone(data)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, "compile", "--key", "id", "--out", out, path)
		if code != 2 || !strings.Contains(stderr, filepath.Join(dir, c.want)) {
			t.Errorf("%s: exit %d, %s", c.name, code, stderr)
		}
	}
}

// TestCompileTSVQuote: a quote inside a TSV field is text, as TSV has no
// quoting; it failed as a bare quote in an unquoted field.
func TestCompileTSVQuote(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "q.tsv"), "id\tn\n1\tsay \"hi\"\n2\t5\" screen\n")
	out := filepath.Join(dir, "q.lut")
	mustRun(t, "compile", "--key", "id", "--out", out, src)
	if got := mustRun(t, "get", out, "1", "2"); got != "{\"id\":\"1\",\"n\":\"say \\\"hi\\\"\"}\n{\"id\":\"2\",\"n\":\"5\\\" screen\"}\n" {
		t.Errorf("lut get: %q", got)
	}
}

// TestCompileQuoteNone: --quote none reads a TSV field that starts with a
// quote as text, for a .lut and an .mmdb table; without it such a field is
// quoted, and text after its closing quote is a bad row.
func TestCompileQuoteNone(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "q.tsv"), "id\tua\n1\t\"hi\"\n2\t\"quoted\" then text\n")
	out := filepath.Join(dir, "q.lut")
	mustRun(t, "compile", "--key", "id", "--quote", "none", "--out", out, src)
	if got := mustRun(t, "get", out, "1", "2"); got != `{"id":"1","ua":"\"hi\""}`+"\n"+`{"id":"2","ua":"\"quoted\" then text"}`+"\n" {
		t.Errorf("lut get: %q", got)
	}
	_, stderr, code := run(t, "compile", "--key", "id", "--out", out, src)
	if want := "compile " + src + ": " + src + ":3:3: extraneous character after closing quote"; code != 1 || stderr != want {
		t.Errorf("without --quote none: exit %d, %q; want %q", code, stderr, want)
	}
	nets := writeFile(t, filepath.Join(dir, "n.tsv"), "network\tsite\n10.0.0.0/8\t\"hq\" west\n")
	mmdb := filepath.Join(dir, "n.mmdb")
	mustRun(t, "compile", "--network", "network", "--quote", "none", "--build-epoch", "1", "--out", mmdb, nets)
	if got := mustRun(t, "get", mmdb, "10.1.2.3"); !strings.Contains(got, `"site":"\"hq\" west"`) {
		t.Errorf("lut get (mmdb): %q", got)
	}
	if _, stderr, code := run(t, "compile", "--key", "id", "--quote", "single", "--out", out, src); code != 2 || !strings.Contains(stderr, `--quote: unknown quoting "single" (want csv or none)`) {
		t.Errorf("--quote single: exit %d, %q", code, stderr)
	}
}

// TestCompileSourceErrorMessage: an error placed in the source is given
// as it is, after the command, not as an error writing the table's DATA
// section.
func TestCompileSourceErrorMessage(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "bad.csv"), "k,v\n1,a\n2\n")
	_, stderr, code := run(t, "compile", "--key", "k", "--out", filepath.Join(dir, "t.lut"), src)
	if want := "compile " + src + ": " + src + ":3:2: expected 2 fields, found 1"; code != 1 || stderr != want {
		t.Errorf("exit %d, %q; want %q", code, stderr, want)
	}
}
