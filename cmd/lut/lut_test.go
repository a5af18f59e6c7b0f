package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run executes the lut command tree in-process and returns stdout, stderr
// and the exit status main would use.
func run(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	code := 0
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
			if ee.msg != "" {
				errb.WriteString(ee.msg)
			}
		} else {
			code = 2
			errb.WriteString(err.Error())
		}
	}
	return out.String(), errb.String(), code
}

func mustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, errs, code := run(t, args...)
	if code != 0 {
		t.Fatalf("lut %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// writeCustomers writes a rows-row customers table (lut sample customers)
// to path.
func writeCustomers(t testing.TB, path string, rows int, seed uint64) {
	t.Helper()
	mustRun(t, "sample", "customers", fmt.Sprint(rows), "--seed", fmt.Sprint(seed), "--out", path)
}

func sha(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// pythonRows reads a CSV with Python's csv module and returns each row as
// a JSON object, keyed by the first column.
const pythonRows = `
import csv, json, sys
with open(sys.argv[1], newline='', encoding='utf-8') as f:
    r = csv.reader(f)
    header = next(r)
    for row in r:
        print(json.dumps(dict(zip(header, row)), ensure_ascii=False))
`

// The round trip of the issue: every key of a generated customers table
// returns exactly the row Python's csv module reads; absent keys exit 1.
func TestRoundTripAgainstPythonCSV(t *testing.T) {
	dir := t.TempDir()
	seed := rand.IntN(1_000_000)
	rows := 100000
	if testing.Short() {
		rows = 5000
	}
	csvPath := filepath.Join(dir, "customers.csv")
	writeCustomers(t, csvPath, rows, uint64(seed))
	lut := filepath.Join(dir, "customers.lut")
	mustRun(t, "compile", "--key", "Index", "--out", lut, csvPath)

	py := exec.Command("python3", "-c", pythonRows, csvPath)
	pyOut, err := py.Output()
	if err != nil {
		t.Fatalf("python csv: %v", err)
	}
	var want []map[string]string
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(pyOut)), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
		keys = append(keys, m["Index"])
	}
	if len(want) != rows {
		t.Fatalf("python read %d rows, want %d", len(want), rows)
	}
	out := mustRun(t, append([]string{"get", lut}, keys...)...)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != rows {
		t.Fatalf("lut get printed %d lines for %d keys", len(got), rows)
	}
	for i, line := range got {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if fmt.Sprint(m) != fmt.Sprint(want[i]) {
			t.Fatalf("seed %d key %s:\n got %v\nwant %v", seed, keys[i], m, want[i])
		}
	}
	for _, absent := range []string{"0", fmt.Sprint(rows + 1), "x"} {
		if _, _, code := run(t, "get", lut, absent); code != 1 {
			t.Fatalf("absent key %q: exit %d, want 1", absent, code)
		}
	}
	// A present and an absent key: the present one prints, exit 1.
	out, _, code := run(t, "get", lut, "1", "nope")
	if code != 1 || strings.Count(out, "\n") != 1 {
		t.Fatalf("mixed keys: exit %d, output %q", code, out)
	}
}

func TestReproducibleAndExportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "c.csv")
	writeCustomers(t, csvPath, 3000, 11)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	a, b := filepath.Join(dir, "a.lut"), filepath.Join(dir, "b.lut")
	mustRun(t, "compile", "--key", "Index", "--out", a, csvPath)
	mustRun(t, "compile", "--key", "Index", "--out", b, csvPath)
	if sha(t, a) != sha(t, b) {
		t.Fatal("compiling the same input twice gave different files")
	}
	for _, f := range []string{"csv", "tsv", "parquet"} {
		exp := filepath.Join(dir, "export."+f)
		mustRun(t, "export", a, "--format", f, "-o", exp)
		again := filepath.Join(dir, "again-"+f+".lut")
		mustRun(t, "compile", "--key", "Index", "--out", again, exp)
		if sha(t, again) != sha(t, a) {
			t.Fatalf("export as %s then compile gave a different file", f)
		}
	}
	// JSON lines export: one object per row with every column.
	out := mustRun(t, "export", a, "--format", "jsonl")
	if n := strings.Count(out, "\n"); n != 3000 {
		t.Fatalf("jsonl export has %d lines", n)
	}
	info := mustRun(t, "inspect", "--json", a)
	if !strings.Contains(info, `"build_time": "2023-11-14T22:13:20Z"`) {
		t.Fatalf("inspect does not show SOURCE_DATE_EPOCH's build time:\n%s", info)
	}
}

func writeFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompileErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.lut")
	checkFile := func(name, content string, args []string, want string) {
		t.Helper()
		src := writeFile(t, filepath.Join(dir, name), content)
		_, errs, code := run(t, append(append([]string{"compile", "--out", out}, args...), src)...)
		if code == 0 || !strings.Contains(errs, want) {
			t.Fatalf("compile %q: exit %d, stderr %q; want it to contain %q", content, code, errs, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("a failed compile left %s", out)
		}
	}
	check := func(content string, args []string, want string) {
		t.Helper()
		checkFile("in.csv", content, args, want)
	}
	check("k,v\na,1\nb,2\na,3\n", []string{"--key", "k"}, `in.csv:4:1: duplicate key "a" at lines 2 and 4`)
	check("v,k\n1,a\n2,b\n3,a\n", []string{"--key", "k"}, `in.csv:4: duplicate key "a" at lines 2 and 4`)
	// A document's duplicate key is at the second row's key, by line
	// and byte column.
	checkFile("in.json", "[\n  {\"v\": 1, \"k\": \"a\"},\n  {\"v\": 2, \"k\": \"b\"},\n  {\"v\": 3, \"k\": \"a\"}\n]\n", []string{"--key", "k"},
		`in.json:4:12: duplicate key "a" at lines 2 and 4`)
	checkFile("in.json", `[{"k": "a"}, {"k": "b"}, {"k": "a"}]`, []string{"--key", "k"},
		`in.json:1:27: duplicate key "a" at line 1, columns 3 and 27`)
	checkFile("in.ndjson", "{\"v\": 1, \"k\": \"a\"}\n{\"v\": 2, \"k\": \"b\"}\n{\"v\": 3, \"k\": \"a\"}\n", []string{"--key", "k"},
		`in.ndjson:3:10: duplicate key "a" at lines 1 and 3`)
	checkFile("in.yaml", "- v: 1\n  k: a\n- v: 2\n  k: b\n- v: 3\n  k: a\n", []string{"--key", "k"},
		`in.yaml:6:6: duplicate key "a" at lines 2 and 6`)
	checkFile("in.yaml", "[{k: a}, {k: b}, {k: a}]\n", []string{"--key", "k"},
		`in.yaml:1:22: duplicate key "a" at line 1, columns 6 and 22`)
	check("k,v\na,1\nb,2,3\n", []string{"--key", "k"}, "in.csv:3:5: expected 2 fields, found 3")
	check("k,v\na,1\nb,\xff\xfe\n", []string{"--key", "k"}, "in.csv:3:3: invalid UTF-8")
	check("k,v\na,1\n", []string{"--key", "nope"}, `key column "nope" is not in the source`)
	check("k,v\na,1\n", []string{"--key", "k", "--on-duplicate", "maybe"}, "unknown duplicate policy")

	// --skip-bad-rows counts and reports instead.
	src := writeFile(t, filepath.Join(dir, "bad.csv"), "k,v\na,1\nb,2,3\nc,3\n")
	_, errs, code := run(t, "compile", "--key", "k", "--skip-bad-rows", "--out", out, src)
	if code != 0 || !strings.Contains(errs, "bad.csv:3") || !strings.Contains(errs, "1 bad rows skipped") {
		t.Fatalf("skip-bad-rows: exit %d, stderr %q", code, errs)
	}
	if got := mustRun(t, "get", out, "c"); !strings.Contains(got, `"v":"3"`) {
		t.Fatalf("row after a skipped row: %q", got)
	}
}

func TestCompositeKeyAndFoldCaseCLI(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "s.tsv"), "host\tport\towner\nWeb01\t443\talice\nweb02\t80\tbob\n")
	out := filepath.Join(dir, "s.lut")
	mustRun(t, "compile", "--key", "host,port", "--fold-case", "--out", out, src)
	if got := mustRun(t, "get", out, "WEB01,443"); !strings.Contains(got, `"owner":"alice"`) || !strings.Contains(got, `"host":"Web01"`) {
		t.Fatalf("composite folded get: %q", got)
	}
	if got := mustRun(t, "get", "--sep", "/", out, "web02/80"); !strings.Contains(got, `"owner":"bob"`) {
		t.Fatalf("--sep: %q", got)
	}
	if _, _, code := run(t, "get", out, "web02"); code != 2 {
		t.Fatalf("a key with too few parts: exit %d, want 2", code)
	}
}

// TestGetWriteError: rows lut get cannot write are an error (exit 2), not
// a silent success.
func TestGetWriteError(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "s.csv"), "k,v\na,1\n")
	table := filepath.Join(dir, "s.lut")
	mustRun(t, "compile", "--key", "k", "--out", table, src)
	// A pipe nobody reads: every write fails with EPIPE.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := newRootCommand()
	var errb bytes.Buffer
	cmd.SetOut(w)
	cmd.SetErr(&errb)
	cmd.SetArgs([]string{"get", table, "a"})
	err = cmd.Execute()
	var ee *exitError
	if err == nil || errors.As(err, &ee) || !strings.Contains(err.Error(), "get: writing the rows: ") {
		t.Fatalf("get into a closed pipe: %v", err)
	}
}

func TestVerifyDetectsDamage(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "s.csv"), "k,v\na,1\nb,2\nc,3\n")
	good := filepath.Join(dir, "good.lut")
	mustRun(t, "compile", "--key", "k", "--out", good, src)
	if out := mustRun(t, "verify", good); !strings.Contains(out, "ok") {
		t.Fatalf("verify of a good file: %q", out)
	}
	b, _ := os.ReadFile(good)
	bad := filepath.Join(dir, "bad.lut")
	for i := 0; i < len(b); i += 5 {
		d := bytes.Clone(b)
		d[i] ^= 1
		writeFile(t, bad, string(d))
		if _, errs, code := run(t, "verify", bad); code != 1 || errs == "" {
			t.Fatalf("byte %d flipped: verify exit %d, stderr %q", i, code, errs)
		}
		// get must not crash; its answer may be anything.
		run(t, "get", bad, "a")
	}
	for n := 0; n < len(b); n += 9 {
		writeFile(t, bad, string(b[:n]))
		if _, errs, code := run(t, "verify", bad); code != 1 || errs == "" {
			t.Fatalf("cut at %d: verify exit %d, stderr %q", n, code, errs)
		}
		run(t, "get", bad, "a")
	}
}

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.lut")
	b := filepath.Join(dir, "b.lut")
	mustRun(t, "compile", "--key", "k", "--out", a, writeFile(t, filepath.Join(dir, "a.csv"), "k,v\nx,1\ny,2\nz,3\n"))
	mustRun(t, "compile", "--key", "k", "--out", b, writeFile(t, filepath.Join(dir, "b.csv"), "k,v\nx,1\ny,20\nw,4\n"))
	out := mustRun(t, "diff", "--limit", "5", a, b)
	for _, want := range []string{"1 added, 1 removed, 1 changed", `+ "w"`, `- "z"`, `~ "y": v: "2" -> "20"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff output lacks %q:\n%s", want, out)
		}
	}
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.lut")
	mustRun(t, "compile", "--key", "k", "--out", out, writeFile(t, filepath.Join(dir, "t.csv"), "k,v\na,1\n"))
	var info map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", out)), &info); err != nil {
		t.Fatal(err)
	}
	if info["rows"].(float64) != 1 || len(info["sections"].([]any)) != 5 {
		t.Fatalf("inspect: %v", info)
	}
	if text := mustRun(t, "inspect", out); !strings.Contains(text, "rows:") || !strings.Contains(text, "MPHF") {
		t.Fatalf("inspect text: %s", text)
	}
}

// TestInspectBucketed inspects the reader's fixture of a bucketed index
// and a small table: each names its index, and the bucketed one's bits
// per key are those of its bucket table and of its slots beyond 64 bits a
// key.
func TestInspectBucketed(t *testing.T) {
	const fixture = "../../reader/testdata/bucketed.lut"
	if text := mustRun(t, "inspect", fixture); !strings.Contains(text, ", buckets ") {
		t.Fatalf("inspect of a bucketed table does not say buckets:\n%s", text)
	}
	var info struct {
		Rows     float64 `json:"rows"`
		Index    string  `json:"index"`
		HashBits float64 `json:"hash_bits_per_key"`
		Sections []struct {
			Name   string  `json:"name"`
			Length float64 `json:"length"`
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", fixture)), &info); err != nil {
		t.Fatal(err)
	}
	bits := -64.0
	for _, s := range info.Sections {
		if s.Name == "MPHF" || s.Name == "SLOTS" {
			bits += 8 * s.Length / info.Rows
		}
	}
	if info.Index != "buckets" || math.Abs(info.HashBits-bits) > 1e-9 {
		t.Fatalf("inspect --json: index %q, %v bits/key; want buckets, %v", info.Index, info.HashBits, bits)
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "t.lut")
	mustRun(t, "compile", "--key", "k", "--out", small, writeFile(t, filepath.Join(dir, "t.csv"), "k,v\na,1\n"))
	if text := mustRun(t, "inspect", small); !strings.Contains(text, ", perfect hash ") {
		t.Fatalf("inspect of a small table does not say perfect hash:\n%s", text)
	}
}
