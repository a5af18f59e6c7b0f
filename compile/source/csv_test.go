package source_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/gzip"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
)

type csvCase struct {
	name    string
	in      string
	file    string // name given to the reader; default "t.csv"
	opts    source.Options
	want    sourcetest.Result
	openErr string
}

var csvCases = []csvCase{
	{
		name: "simple",
		in:   "a,b,c\n1,2,3\n4,5,6\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"2:1|2|3", "3:4|5|6"}},
	},
	{
		name: "no final newline",
		in:   "a,b\n1,2\n3,4",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2", "3:3|4"}},
	},
	{
		name: "CRLF",
		in:   "a,b\r\n1,2\r\n3,4\r\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2", "3:3|4"}},
	},
	{
		name: "CR at EOF",
		in:   "a,b\r\n1,2\r",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"}},
	},
	{
		name: "lone CR kept in field",
		in:   "a,b\nx\ry,z\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:x\ry|z"}},
	},
	{
		name: "BOM",
		in:   "\xEF\xBB\xBFa,b\n1,2\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"}},
	},
	{
		name: "BOM only at start",
		in:   "a,b\n\xEF\xBB\xBF1,2\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:\xEF\xBB\xBF1|2"}},
	},
	{
		name: "quoted delimiter",
		in:   "name,city\n\"Smith, John\",\"Port Lisa\"\n",
		want: sourcetest.Result{Columns: []string{"name", "city"}, Rows: []string{"2:Smith, John|Port Lisa"}},
	},
	{
		name: "doubled quotes",
		in:   "a,b\n\"say \"\"hi\"\"\",\"\"\"\"\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{`2:say "hi"|"`}},
	},
	{
		name: "empty quoted",
		in:   "a,b\n\"\",x\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:|x"}},
	},
	{
		name: "newline in quotes",
		in:   "a,b\n\"line1\nline2\",x\n\"c\r\nd\",y\nlast,z\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:line1\nline2|x", "4:c\r\nd|y", "6:last|z"}},
	},
	{
		name: "quoted last field CRLF",
		in:   "a,b\r\n1,\"2\"\r\n3,\"4\"",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2", "3:3|4"}},
	},
	{
		name: "quoted header",
		in:   "\"a,1\",\"b\"\"\"\nx,y\n",
		want: sourcetest.Result{Columns: []string{"a,1", `b"`}, Rows: []string{"2:x|y"}},
	},
	{
		name: "empty fields",
		in:   "a,b,c\n,,\n1,,\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"2:||", "3:1||"}},
	},
	{
		name: "spaces kept",
		in:   "a,b\n  x , y \n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:  x | y "}},
	},
	{
		name: "unicode",
		in:   "名前,città\nЖуков,Zürich 🚀\n",
		want: sourcetest.Result{Columns: []string{"名前", "città"}, Rows: []string{"2:Жуков|Zürich 🚀"}},
	},
	{
		name: "TSV by name",
		file: "t.tsv",
		in:   "a\tb\nx,1\t\"y\"\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:x,1|y"}},
	},
	{
		// TSV has no quoting: a quote inside a field is text. A field that
		// starts with one is quoted as in CSV, as lut export writes it.
		name: "TSV quote inside a field",
		file: "t.tsv",
		in:   "a\tb\tc\nsay \"hi\"\t\"x\ty\"\t2\"\"\n\"a\"b\t1\t2\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"2:say \"hi\"|x\ty|2\"\""},
			Errs: []string{"t.tsv:3:1: extraneous character after closing quote"}},
	},
	{
		// quote: none reads a quote as text even at a field's start; a
		// record is one line, so a lone quote swallows nothing.
		name: "TSV without quoting",
		file: "t.tsv",
		opts: source.Options{Quote: source.QuoteNone},
		in:   "a\tb\tc\n\"hi\"\t\"quoted\" then text\t\"\n\"\"\"\t\"x\t\r\n\"a\tb\"\t3\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"2:\"hi\"|\"quoted\" then text|\"", "3:\"\"\"|\"x|", "4:\"a|b\"|3"}},
	},
	{
		name: "CSV without quoting",
		opts: source.Options{Quote: source.QuoteNone},
		in:   "\"a\",b\n\"1,2\",x\n5\" screen,\"\n",
		want: sourcetest.Result{Columns: []string{"\"a\"", "b"}, Rows: []string{"3:5\" screen|\""},
			Errs: []string{"t.csv:2:7: expected 2 fields, found 3"}},
	},
	{
		name: "tab delimiter of a CSV file",
		opts: source.Options{Delimiter: '\t'},
		in:   "a\tb\n5\" screen\t\"q\"\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:5\" screen|q"}},
	},
	{
		name: "TSV by format",
		opts: source.Options{Format: "tsv"},
		in:   "a\tb\n1\t2\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"}},
	},
	{
		name: "custom delimiter",
		opts: source.Options{Delimiter: ';'},
		in:   "a;b\n1,5;\"x;y\"\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1,5|x;y"}},
	},
	{
		name: "no header row",
		opts: source.Options{Header: []string{"k", "v"}},
		in:   "1,2\n3,4\n",
		want: sourcetest.Result{Columns: []string{"k", "v"}, Rows: []string{"1:1|2", "2:3|4"}},
	},
	{
		name: "no header row, BOM",
		opts: source.Options{Header: []string{"k"}},
		in:   "\xEF\xBB\xBFx\n",
		want: sourcetest.Result{Columns: []string{"k"}, Rows: []string{"1:x"}},
	},
	{
		name: "header only",
		in:   "a,b\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}},
	},
	{
		name: "header only, no newline",
		in:   "a,b",
		want: sourcetest.Result{Columns: []string{"a", "b"}},
	},
	{
		name: "trailing blank lines are not rows",
		in:   "a,b\n1,2\n\n\r\n\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"}},
	},
	{
		name: "trailing blank line with lone CR",
		in:   "a\n1\n\n\r",
		want: sourcetest.Result{Columns: []string{"a"}, Rows: []string{"2:1"}},
	},
	{
		name: "blank line in the middle",
		in:   "a,b\n1,2\n\n3,4\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2", "4:3|4"},
			Errs: []string{"t.csv:3:1: expected 2 fields, found 1 (blank line)"}},
	},
	{
		name: "blank lines in a single-column table",
		in:   "a\n1\n\r\n\n2\n\n",
		want: sourcetest.Result{Columns: []string{"a"}, Rows: []string{"2:1", "3:", "4:", "5:2"}},
	},
	{
		name: "quoted empty single column",
		in:   "a\n\"\"\nx\n\"\"\n",
		want: sourcetest.Result{Columns: []string{"a"}, Rows: []string{"2:", "3:x", "4:"}},
	},
	{
		name: "too few fields",
		in:   "a,b,c\n1,2\n4,5,6\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"3:4|5|6"},
			Errs: []string{"t.csv:2:4: expected 3 fields, found 2"}},
	},
	{
		name: "too many fields",
		in:   "a,b\n1,2,3\n4,5\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"3:4|5"},
			Errs: []string{"t.csv:2:5: expected 2 fields, found 3"}},
	},
	{
		name: "invalid UTF-8",
		in:   "Index,Company\n1,Acme\n2,Ac\xffme\n3,\"x\xc3\"\n4,ok\n",
		want: sourcetest.Result{Columns: []string{"Index", "Company"}, Rows: []string{"2:1|Acme", "5:4|ok"},
			Errs: []string{
				"t.csv:3:3: invalid UTF-8 in field 2 (Company)",
				"t.csv:4:3: invalid UTF-8 in field 2 (Company)",
			}},
	},
	{
		name: "bare quote",
		in:   "a,b,c\n1,x\"y,3\n4,5,6\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"3:4|5|6"},
			Errs: []string{"t.csv:2:3: bare quote in unquoted field"}},
	},
	{
		name: "bare quote at end of line",
		in:   "a,b\n1,2\"\n3,4\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"3:3|4"},
			Errs: []string{"t.csv:2:3: bare quote in unquoted field"}},
	},
	{
		name: "bare quote on last line",
		in:   "a,b\n1,2\n3,4\"",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"},
			Errs: []string{"t.csv:3:3: bare quote in unquoted field"}},
	},
	{
		name: "extraneous character after quote",
		in:   "a,b\n\"x\"y,2\n3,4\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"3:3|4"},
			Errs: []string{"t.csv:2:1: extraneous character after closing quote"}},
	},
	{
		name: "extraneous character after quote at end of line",
		in:   "a,b\n1,\"x\"y\r\n3,4\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"3:3|4"},
			Errs: []string{"t.csv:2:3: extraneous character after closing quote"}},
	},
	{
		name: "error line after multi-line row",
		in:   "a,b\n\"1\n2\n3\",x\n1,2,3\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1\n2\n3|x"},
			Errs: []string{"t.csv:5:5: expected 2 fields, found 3"}},
	},
	{
		name: "unterminated quote",
		in:   "a,b\n1,2\n3,\"abc\n4,5\n6,7\n",
		want: sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"},
			Errs: []string{"t.csv:3:3: unterminated quoted field starting at line 3"}},
	},
	{
		name: "unterminated quote after newline in an earlier field",
		in:   "a,b\n\"x\ny\",\"abc\n",
		want: sourcetest.Result{Columns: []string{"a", "b"},
			Errs: []string{"t.csv:3:4: unterminated quoted field starting at line 3"}},
	},
	{
		name: "bad field after a quoted field holding a newline",
		in:   "a,b,c\n\"x\ny\",\xff,3\n4,5,6\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"4:4|5|6"},
			Errs: []string{"t.csv:3:4: invalid UTF-8 in field 2 (b)"}},
	},
	{
		name: "bad field after multi-byte characters: the column counts bytes",
		in:   "a,b,c\ncafé,日本,x\"y\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"},
			Errs: []string{"t.csv:2:14: bare quote in unquoted field"}},
	},
	{
		name: "bad field in TSV after a quoted one",
		opts: source.Options{Format: "tsv"},
		in:   "a\tb\tc\nx\t\"q\"\"r\"\t\xff\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"},
			Errs: []string{"t.csv:2:10: invalid UTF-8 in field 3 (c)"}},
	},
	{
		name: "missing field after a quoted field holding a newline",
		in:   "a,b,c\n1,\"x\ny\"\n7,8,9\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"}, Rows: []string{"4:7|8|9"},
			Errs: []string{"t.csv:3:3: expected 3 fields, found 2"}},
	},
	{
		name: "missing field, CRLF",
		in:   "a,b,c\r\n1,é\r\n",
		want: sourcetest.Result{Columns: []string{"a", "b", "c"},
			Errs: []string{"t.csv:2:5: expected 3 fields, found 2"}},
	},
	{
		name: "field too many after a quoted one",
		in:   "a,b\n\"1,\"\"2\"\"\",3,4\n",
		want: sourcetest.Result{Columns: []string{"a", "b"},
			Errs: []string{"t.csv:2:13: expected 2 fields, found 3"}},
	},
	{
		name:    "duplicate header after multi-byte names",
		in:      "é,b,é\n1,2,3\n",
		openErr: `t.csv:1:6: duplicate column name "é" (columns 1 and 3)`,
	},
	{
		name:    "duplicate header after a byte order mark",
		in:      "\xEF\xBB\xBFa,a\n",
		openErr: `t.csv:1:3: duplicate column name "a" (columns 1 and 2)`,
	},
	{
		name: "several errors in a row: first one reported",
		in:   "a,b\nx\"y,\xff,3\n",
		want: sourcetest.Result{Columns: []string{"a", "b"},
			Errs: []string{"t.csv:2:1: bare quote in unquoted field"}},
	},
	{
		name:    "duplicate header",
		in:      "a,b,a\n1,2,3\n",
		openErr: `t.csv:1:5: duplicate column name "a" (columns 1 and 3)`,
	},
	{
		name:    "duplicate Options.Header",
		opts:    source.Options{Header: []string{"x", "x"}},
		in:      "1,2\n",
		openErr: `t.csv: duplicate column name "x" (columns 1 and 2)`,
	},
	{
		name:    "empty file",
		in:      "",
		openErr: "t.csv:1: empty header",
	},
	{
		name:    "blank header",
		in:      "\n1,2\n",
		openErr: "t.csv:1: empty header",
	},
	{
		name:    "BOM only",
		in:      "\xEF\xBB\xBF",
		openErr: "t.csv:1: empty header",
	},
	{
		name:    "invalid UTF-8 in header",
		in:      "a,\xff\n",
		openErr: "t.csv:1:3: invalid UTF-8 in column name 2",
	},
	{
		name:    "lines that end with CR alone",
		in:      "id,name\r1,a\r2,b\r",
		openErr: `t.csv:1:8: a carriage return not followed by a line feed in the header: lines that end with a CR alone (classic Mac OS) are not line ends; convert them to LF or CRLF (tr '\r' '\n' < in.csv > out.csv)`,
	},
	{
		name: "a quoted header name with a CR",
		in:   "id,\"na\rme\"\n1,a\n",
		want: sourcetest.Result{Columns: []string{"id", "na\rme"}, Rows: []string{"2:1|a"}},
	},
	{
		name:    "bad quote in header",
		in:      "a,\"b\n",
		openErr: "t.csv:1:3: unterminated quoted field starting at line 1",
	},
	{
		name:    "bad delimiter",
		opts:    source.Options{Delimiter: '"'},
		in:      "a\n",
		openErr: `t.csv: invalid delimiter '"'`,
	},
	{
		name:    "multi-byte delimiter",
		opts:    source.Options{Delimiter: '§'},
		in:      "a\n",
		openErr: `t.csv: delimiter '§' is not a single-byte character`,
	},
}

func runCSVCase(t *testing.T, tc csvCase, wrap func(io.Reader) io.Reader, bufSize int) {
	t.Helper()
	name := tc.file
	if name == "" {
		name = "t.csv"
	}
	var r source.Reader
	cr, err := source.NewCSVReaderSize(wrap(strings.NewReader(tc.in)), name, tc.opts, nil, bufSize)
	if err == nil {
		r = cr
	}
	if tc.openErr != "" {
		if err == nil || err.Error() != tc.openErr {
			t.Fatalf("open error = %v, want %q", err, tc.openErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := sourcetest.ReadAll(t, r)
	if !reflect.DeepEqual(got, tc.want) {
		t.Errorf("got  %#v\nwant %#v", got, tc.want)
	}
}

func TestCSV(t *testing.T) {
	wrappers := map[string]func(io.Reader) io.Reader{
		"whole":   func(r io.Reader) io.Reader { return r },
		"onebyte": iotest.OneByteReader,
		"halves":  iotest.HalfReader,
	}
	for _, tc := range csvCases {
		for wn, wrap := range wrappers {
			t.Run(tc.name+"/"+wn, func(t *testing.T) { runCSVCase(t, tc, wrap, source.CSVBufSize) })
		}
		// A tiny buffer makes every record cross buffer boundaries.
		t.Run(tc.name+"/tinybuf", func(t *testing.T) { runCSVCase(t, tc, iotest.HalfReader, 4) })
	}
}

// TestCSVFiles reads through source.Open: plain, gzip by name, gzip by content,
// TSV by extension.
func TestCSVFiles(t *testing.T) {
	dir := t.TempDir()
	data := "id,name\n1,\"Smith, J\"\n2,Ünal\n"
	want := sourcetest.Result{Columns: []string{"id", "name"}, Rows: []string{"2:1|Smith, J", "3:2|Ünal"}}
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	files := map[string][]byte{
		"plain.csv":     []byte(data),
		"plain.txt":     []byte(data),
		"zipped.csv.gz": gz(data),
		"sniffed.csv":   gz(data),
		"tabs.tsv":      []byte(strings.ReplaceAll(data, ",", "\t")),
		"tabs.TAB.gz":   gz(strings.ReplaceAll(data, ",", "\t")),
		"data.bin":      []byte(data),
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			opts := source.Options{}
			if name == "data.bin" {
				opts.Format = "csv"
			}
			r, err := source.Open(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := sourcetest.ReadAll(t, r)
			if err := r.Close(); err != nil {
				t.Error(err)
			}
			w := want
			if strings.Contains(strings.ToLower(name), "tab") {
				w = sourcetest.Result{Columns: want.Columns, Rows: []string{"2:1|Smith\t J", "3:2|Ünal"}}
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got  %#v\nwant %#v", got, w)
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		if _, err := source.Open(filepath.Join(dir, "missing.csv"), source.Options{}); err == nil || !strings.Contains(err.Error(), "missing.csv") {
			t.Errorf("missing file: %v", err)
		}
		p := filepath.Join(dir, "x.unknown")
		if err := os.WriteFile(p, []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := source.Open(p, source.Options{}); err == nil || !strings.Contains(err.Error(), "x.unknown: unknown source format") {
			t.Errorf("unknown extension: %v", err)
		}
		if _, err := source.Open(p, source.Options{Format: "xml"}); err == nil || !strings.Contains(err.Error(), `unknown source format "xml"`) {
			t.Errorf("unknown format: %v", err)
		}
		bad := filepath.Join(dir, "bad.csv.gz")
		if err := os.WriteFile(bad, []byte("a,b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := source.Open(bad, source.Options{}); err == nil || !strings.HasPrefix(err.Error(), bad+": gzip:") {
			t.Errorf("bad gzip: %v", err)
		}
		dup := filepath.Join(dir, "dup.csv")
		if err := os.WriteFile(dup, []byte("a,a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := source.Open(dup, source.Options{}); err == nil || err.Error() != dup+`:1:3: duplicate column name "a" (columns 1 and 2)` {
			t.Errorf("duplicate: %v", err)
		}
	})
}

func TestCSVStdinName(t *testing.T) {
	r, err := source.NewCSVReader(strings.NewReader("a,b\n1\n"), source.StdinName, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if err == nil || err.Error() != "<stdin>:2:2: expected 2 fields, found 1" {
		t.Errorf("err = %v", err)
	}
}

// TestCSVSkipBadRows checks that the caller can go on after each kind of
// row error and that the row error carries its position.
func TestCSVSkipBadRows(t *testing.T) {
	in := "a,b,c\n" +
		"1,2,3\n" + // 2 ok
		"1,2\n" + // 3 count
		"1,x\"y,3\n" + // 4 bare quote
		"1,2,\xfe\n" + // 5 utf8
		"\"a\"b,2,3\n" + // 6 extraneous
		"\n" + // 7 blank
		"7,8,9\n" // 8 ok
	r, err := source.NewCSVReader(strings.NewReader(in), "f.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		line int64
		col  int
		row  string
	}
	want := []step{{2, 0, "1,2,3"}, {3, 4, ""}, {4, 3, ""}, {5, 5, ""}, {6, 1, ""}, {7, 1, ""}, {8, 0, "7,8,9"}}
	for _, w := range want {
		fields, err := r.Next()
		if w.row != "" {
			if err != nil {
				t.Fatalf("line %d: %v", w.line, err)
			}
			if got := string(bytes.Join(fields, []byte(","))); got != w.row {
				t.Errorf("line %d: row %q, want %q", w.line, got, w.row)
			}
		} else {
			var re *source.RowError
			if !errors.As(err, &re) {
				t.Fatalf("line %d: err = %v, want a RowError", w.line, err)
			}
			if re.File != "f.csv" || re.Line != w.line || re.Column != w.col {
				t.Errorf("RowError %+v, want line %d column %d", re, w.line, w.col)
			}
		}
		if r.Line() != w.line {
			t.Errorf("Line() = %d, want %d", r.Line(), w.line)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("at end: %v", err)
	}
}

// TestCSVLongRecords crosses the read buffer boundary and makes it grow.
func TestCSVLongRecords(t *testing.T) {
	var b strings.Builder
	b.WriteString("k,v\n")
	var want []string
	line := 2
	for i := 0; i < 40; i++ {
		n := (i*37 + 1) * 997
		if i%10 == 9 {
			n = 3*source.CSVBufSize + i
		}
		v := strings.Repeat(string(rune('a'+i%26)), n)
		if i%2 == 0 {
			fmt.Fprintf(&b, "%d,%s\n", i, v)
			want = append(want, fmt.Sprintf("%d:%d|%s", line, i, v))
			line++
		} else {
			q := v[:n/2] + "\"\"\n" + v[n/2:]
			fmt.Fprintf(&b, "%d,\"%s\"\r\n", i, q)
			want = append(want, fmt.Sprintf("%d:%d|%s", line, i, v[:n/2]+"\"\n"+v[n/2:]))
			line += 2
		}
	}
	for _, wrap := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.HalfReader} {
		r, err := source.NewCSVReader(wrap(strings.NewReader(b.String())), "long.csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := sourcetest.ReadAll(t, r)
		if len(got.Errs) > 0 {
			t.Fatal(got.Errs)
		}
		if !reflect.DeepEqual(got.Rows, want) {
			t.Fatalf("long records differ (%d rows, want %d)", len(got.Rows), len(want))
		}
	}
}

func TestCSVRecordTooLong(t *testing.T) {
	in := "a\n\"" + strings.Repeat("x", source.MaxRecordSize+10)
	r, err := source.NewCSVReader(strings.NewReader(in), "huge.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	var re *source.RowError
	// A data error at its line, but final: reading cannot go past it.
	if !errors.As(err, &re) || !re.Final || source.Skippable(err) || !strings.HasPrefix(err.Error(), "huge.csv:2: record longer than 64 MiB") {
		t.Fatalf("err = %v", err)
	}
	if _, err2 := r.Next(); !errors.Is(err2, err) {
		t.Errorf("error is not sticky: %v", err2)
	}
}

type failingReader struct{ data io.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("disk on fire")
	}
	return n, err
}

func TestCSVReadError(t *testing.T) {
	r, err := source.NewCSVReader(&failingReader{strings.NewReader("a,b\n1,2\n3,")}, "f.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for range 5 {
		if _, last = r.Next(); last != nil {
			break
		}
	}
	if last == nil || last.Error() != "f.csv: disk on fire" {
		t.Errorf("err = %v", last)
	}
}

// TestCSVRoundTrip writes random rows with the CSV and TSV writers and
// reads them back.
func TestCSVRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, format := range []string{"csv", "tsv"} {
		for ncol := 1; ncol <= 4; ncol++ {
			cols := make([]string, ncol)
			for i := range cols {
				cols[i] = fmt.Sprintf("c%d%s", i, sourcetest.RandomField(rng))
			}
			if ncol == 2 {
				cols[0] = "\xEF\xBB\xBFbom"
			}
			var rows [][]string
			for range 300 {
				row := make([]string, ncol)
				for i := range row {
					row[i] = sourcetest.RandomField(rng)
				}
				rows = append(rows, row)
			}
			var buf bytes.Buffer
			w, err := source.NewWriter(format, &buf, cols)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rows {
				fields := make([][]byte, len(row))
				for i, f := range row {
					fields[i] = []byte(f)
				}
				if err := w.Write(fields); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := source.NewCSVReader(&buf, "rt."+format, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Columns(), cols) {
				t.Fatalf("%s/%d: columns %q, want %q", format, ncol, r.Columns(), cols)
			}
			for i, want := range rows {
				fields, err := r.Next()
				if err != nil {
					t.Fatalf("%s/%d: row %d: %v", format, ncol, i, err)
				}
				for j := range want {
					if string(fields[j]) != want[j] {
						t.Fatalf("%s/%d: row %d field %d: %q, want %q", format, ncol, i, j, fields[j], want[j])
					}
				}
			}
			if _, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("%s/%d: at end: %v", format, ncol, err)
			}
		}
	}
}

// loopReader repeats data forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.data[l.off:])
		n += c
		l.off = (l.off + c) % len(l.data)
	}
	return n, nil
}

func TestCSVZeroAllocs(t *testing.T) {
	rows := "1,DD37Cf93aecA6Dc,Sheryl,Baxter,\"Rasmussen, Group\",East Leonard,Chile,229.077.5154,397.884.0519x718,zunigavanessa@smith.info,2020-08-24,http://www.stephenson.com/\n" +
		"2,1Ef7b82A4CAAD10,Preston,Lozano,Vega-Gentry,East Jimmychester,Djibouti,5153435776,686-620-1820x944,vmata@colon.com,2021-04-23,http://www.hobbs.com/\n" +
		"3,6F94879bDAfE5a6,\"Roy \"\"The\"\" Berry\",\"multi\nline\",Murillo-Perry,Isabelborough,Antigua and Barbuda,+1-539-402-0259,(496)978-3969x58947,beckycarr@hogan.com,2020-03-25,http://www.lawrence.com/\n"
	header := "Index,Customer Id,First Name,Last Name,Company,City,Country,Phone 1,Phone 2,Email,Subscription Date,Website\n"
	r, err := source.NewCSVReader(io.MultiReader(strings.NewReader(header), &loopReader{data: []byte(rows)}), "loop.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Warm up so that the buffers have grown.
	for range 10000 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	// The set of the quoted fields, as compile keeps it with each row,
	// costs no allocation either.
	fp := r.(source.FieldPositioner)
	quoted := make([]uint64, 0, 1)
	allocs := testing.AllocsPerRun(20000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		quoted = fp.AppendQuoted(quoted[:0])
	})
	if allocs != 0 {
		t.Errorf("%v allocations per row, want 0", allocs)
	}
}

// customersCSV generates n rows shaped like the customers sample data
// set (12 columns, some quoted fields with commas).
func customersCSV(n int) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	first := strings.Fields("Pam Michelle Andrew Alvin Jenna Greg Chelsea Jon Kristina Ashley Shawn Lisa")
	last := strings.Fields("Sparks Blevins Shah Goodman Walter Ramos Hebert Morgan Wolfe Bradshaw Fuller")
	countries := []string{"Chile", "\"Virgin Islands, U.S.\"", "Slovakia (Slovak Republic)", "\"Iran, Islamic Republic of\"", "Japan", "Germany"}
	var b bytes.Buffer
	b.WriteString("Index,Customer Id,First Name,Last Name,Company,City,Country,Phone 1,Phone 2,Email,Subscription Date,Website\n")
	for i := 1; i <= n; i++ {
		company := last[rng.IntN(len(last))] + "-" + last[rng.IntN(len(last))]
		if rng.IntN(4) == 0 {
			company = "\"" + last[rng.IntN(len(last))] + ", " + last[rng.IntN(len(last))] + " and Sons\""
		}
		fmt.Fprintf(&b, "%d,%015X,%s,%s,%s,Port Lisa,%s,+1-%03d-%03d-%04d,%03d.%03d.%04dx%d,%s%d@example.com,2021-%02d-%02d,https://www.%s.com/\n",
			i, rng.Uint64()>>4, first[rng.IntN(len(first))], last[rng.IntN(len(last))], company,
			countries[rng.IntN(len(countries))], rng.IntN(1000), rng.IntN(1000), rng.IntN(10000),
			rng.IntN(1000), rng.IntN(1000), rng.IntN(10000), rng.IntN(1000),
			strings.ToLower(first[rng.IntN(len(first))]), i, 1+rng.IntN(12), 1+rng.IntN(28),
			strings.ToLower(last[rng.IntN(len(last))]))
	}
	return b.Bytes()
}

// BenchmarkCSV parses generated customers data. Set LUTKIT_BENCH_CSV to
// the path of a CSV file (for example one made by gen-customers.py) to
// parse that file instead.
func BenchmarkCSV(b *testing.B) {
	var data []byte
	if p := os.Getenv("LUTKIT_BENCH_CSV"); p != "" {
		var err error
		if data, err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	} else {
		data = customersCSV(200000)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := source.NewCSVReader(bytes.NewReader(data), "bench.csv", source.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows++
		}
		r.Close()
		b.ReportMetric(float64(rows), "rows/op")
	}
}

func TestOpenStdin(t *testing.T) {
	p := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(p, []byte("a\tb\n1\t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved }()

	if _, err := source.Open("-", source.Options{Format: "parquet"}); err == nil {
		t.Error("parquet from standard input accepted")
	}
	r, err := source.Open("-", source.Options{Format: "tsv"})
	if err != nil {
		t.Fatal(err)
	}
	got := sourcetest.ReadAll(t, r)
	r.Close()
	want := sourcetest.Result{Columns: []string{"a", "b"}, Rows: []string{"2:1|2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}
