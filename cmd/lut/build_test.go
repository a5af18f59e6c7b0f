package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// writeKillFixture writes a tables.yaml of three .lut tables and one
// .mmdb table with sources large enough that a build takes a moment.
func writeKillFixture(t *testing.T, dir string, rows int) string {
	t.Helper()
	for _, name := range []string{"alpha", "beta", "gamma"} {
		f, err := os.Create(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		fmt.Fprintln(w, "id,name,value")
		for i := range rows {
			fmt.Fprintf(w, "%d,%s-%d,%x\n", i, name, i, i*7919)
		}
		closeWritten(t, f, w)
	}
	f, err := os.Create(filepath.Join(dir, "nets.csv"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "network,site")
	for i := range 4000 {
		fmt.Fprintf(w, "10.%d.%d.0/24,site%d\n", i/256, i%256, i%17)
	}
	closeWritten(t, f, w)
	yml := `version: 1
tables:
  - {name: alpha, sources: [alpha.csv], key: id}
  - {name: beta, sources: [beta.csv], key: id}
  - {name: gamma, sources: [gamma.csv], key: id}
  - name: nets
    kind: mmdb
    sources:
      - {path: nets.csv, type: networks, network_column: network}
`
	p := filepath.Join(dir, "tables.yaml")
	if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkDist asserts that the manifest of dist, if any, names complete,
// verified artifacts only.
func checkDist(t *testing.T, dist string, round int) bool {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dist, tables.ManifestName)); os.IsNotExist(err) {
		return false
	}
	res, err := tables.VerifyDir(dist)
	if err != nil {
		t.Fatalf("round %d: the manifest names a bad artifact: %v", round, err)
	}
	if len(res) != 4 {
		t.Fatalf("round %d: manifest lists %d tables", round, len(res))
	}
	return true
}

// TestBuildKill9 kills "lut build" with SIGKILL at random points, 20
// times: the manifest must always name complete, verified artifacts only.
func TestBuildKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the lut command")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "lut")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	src := filepath.Join(tmp, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeKillFixture(t, src, 60_000)
	dist := filepath.Join(tmp, "dist")

	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"build", cfg, "--out", dist, "-j", "2"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// One uninterrupted build tells how long a build takes.
	t0 := time.Now()
	if err := run("--force").Wait(); err != nil {
		t.Fatalf("uninterrupted build: %v", err)
	}
	full := time.Since(t0)
	if !checkDist(t, dist, -1) {
		t.Fatal("no manifest after a complete build")
	}
	os.RemoveAll(dist)
	t.Logf("a full build takes %v", full)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	var withManifest, completed int
	for round := range 20 {
		// Change a source so that the build has work to do, and force
		// every other round.
		name := []string{"alpha", "beta", "gamma"}[round%3]
		f, err := os.OpenFile(filepath.Join(src, name+".csv"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		fmt.Fprintf(w, "r%d,%s-round,%d\n", round, name, round)
		closeWritten(t, f, w)
		var args []string
		if round%2 == 1 {
			args = append(args, "--force")
		}
		cmd := run(args...)
		delay := time.Duration(rng.Int64N(int64(full) * 11 / 10))
		time.Sleep(delay)
		// A build may be over already: then Wait says how it ended.
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if err == nil {
			completed++
		} else if errors.As(err, &ee) && ee.ExitCode() > 0 {
			t.Fatalf("round %d: build failed on its own: %v\n%s", round, err, cmd.Stdout)
		}
		if checkDist(t, dist, round) {
			withManifest++
		}
		// No temporary file is ever named by the manifest; stale ones
		// are removed by the next build.
		if m, err := tables.ReadManifest(filepath.Join(dist, tables.ManifestName)); err == nil {
			for _, e := range m.Tables {
				if strings.HasPrefix(e.File, ".") {
					t.Fatalf("round %d: manifest names a temporary file %s", round, e.File)
				}
			}
		}
	}
	t.Logf("20 kills: %d builds completed before the kill, %d rounds left a manifest", completed, withManifest)
	// A build after all this completes and verifies.
	cmd := run()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("final build: %v\n%s", err, cmd.Stdout)
	}
	if !checkDist(t, dist, 20) {
		t.Fatal("no manifest after the final build")
	}
	ents, _ := os.ReadDir(dist)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.Contains(e.Name(), ".build-") {
			t.Errorf("temporary file left after a complete build: %s", e.Name())
		}
	}
	out, err := exec.Command(bin, "verify", dist).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok (MANIFEST.json and 4 artifacts)") {
		t.Errorf("lut verify %s: %v\n%s", dist, err, out)
	}
}

// closeWritten flushes w to f and closes f, failing the test if either
// fails: the file must hold everything written.
func closeWritten(t *testing.T, f *os.File, w *bufio.Writer) {
	t.Helper()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBuildReportsNodes: lut build and lut verify DIR count an .mmdb
// table's search tree nodes as nodes, not rows, and say what they
// verified of it.
func TestBuildReportsNodes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeKillFixture(t, dir, 10)
	dist := filepath.Join(dir, "dist")
	stdout, stderr, code := run(t, "build", cfg, "--out", dist, "--progress", "never")
	if code != 0 {
		t.Fatalf("build: exit %d\n%s", code, stderr)
	}
	if !regexp.MustCompile(`built +nets +nets-[0-9a-f]+\.mmdb \([0-9]+ nodes, `).MatchString(stdout) ||
		!regexp.MustCompile(`built +alpha +alpha-[0-9a-f]+\.lut \(10 rows, `).MatchString(stdout) {
		t.Errorf("build output:\n%s", stdout)
	}
	stdout, stderr, code = run(t, "verify", dist)
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, stderr)
	}
	if !regexp.MustCompile(`nets-[0-9a-f]+\.mmdb: ok \(table nets, mmdb, [0-9]+ nodes, digest and the search tree and data verified\)`).MatchString(stdout) ||
		!regexp.MustCompile(`alpha-[0-9a-f]+\.lut: ok \(table alpha, lut, 10 rows, digest and every checksum verified\)`).MatchString(stdout) {
		t.Errorf("verify output:\n%s", stdout)
	}
}

// TestBuildThroughLinks: lut build into a directory whose artifact names
// and MANIFEST.json are symbolic links into another directory (relative
// links to files there, or dangling ones) keeps the links: the files they
// name get the new artifacts and manifest, "lut verify DIR" passes through
// them, and a reader that opened an artifact before keeps its content.
func TestBuildThroughLinks(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000") // the same artifacts every build
	dir := t.TempDir()
	cfg := writeKillFixture(t, dir, 10)
	// A first build names the artifacts.
	plain := filepath.Join(dir, "plain")
	mustRun(t, "build", cfg, "--out", plain, "--progress", "never")
	ents, err := os.ReadDir(plain)
	if err != nil {
		t.Fatal(err)
	}
	dist, store := filepath.Join(dir, "dist"), filepath.Join(dir, "store")
	for _, d := range []string{dist, store} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	olds := map[string]*os.File{}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			continue
		}
		names = append(names, n)
		if err := os.Symlink("../store/"+n, filepath.Join(dist, n)); err != nil {
			t.Fatal(err)
		}
		if len(names)%2 == 0 {
			continue // a dangling link
		}
		writeFile(t, filepath.Join(store, n), "the previous version")
		f, err := os.Open(filepath.Join(store, n))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		olds[n] = f
	}
	if len(names) != 5 || len(olds) == 0 || len(olds) == len(names) {
		t.Fatalf("names %v, %d files there before", names, len(olds))
	}
	mustRun(t, "build", cfg, "--out", dist, "--progress", "never")
	mustRun(t, "verify", dist)
	for _, n := range names {
		if fi, err := os.Lstat(filepath.Join(dist, n)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the link was replaced (%v)", n, err)
		}
		if sha(t, filepath.Join(store, n)) != sha(t, filepath.Join(plain, n)) {
			t.Errorf("%s: the file the link names is not the one built", n)
		}
		if f := olds[n]; f != nil {
			var b bytes.Buffer
			if _, err := b.ReadFrom(f); err != nil || b.String() != "the previous version" {
				t.Errorf("%s: the file opened before reads %.20q, %v", n, b.String(), err)
			}
		}
	}
	if left := append(tempFiles(t, dist), tempFiles(t, store)...); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestBuildOutputFull: a build whose output cannot take the new table
// (the file size limit stands in for a full disk) fails that table
// naming the output directory and the system's error, not the source
// it read nor a temporary file, exits 1 and leaves the previous manifest
// and no temporary file.
func TestBuildOutputFull(t *testing.T) {
	bin := lutBinary(t)
	dir := t.TempDir()
	var lut, nets bytes.Buffer
	lut.WriteString("k,v\n")
	nets.WriteString("net,site\n")
	for i := range 10000 {
		fmt.Fprintf(&lut, "key%d,value%d\n", i, i*7)
		fmt.Fprintf(&nets, "10.%d.%d.0/24,s%d\n", i/256, i%256, i)
	}
	for name, b := range map[string][]byte{"a.csv": lut.Bytes(), "nets.csv": nets.Bytes(), "tables.yaml": []byte(`tables:
  - {name: a, sources: [a.csv], key: k}
  - name: geo
    kind: mmdb
    sources: [{path: nets.csv, network_column: net, fields: ["site=site"]}]
`)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dist := filepath.Join(dir, "dist")
	if out, err := exec.Command(bin, "build", filepath.Join(dir, "tables.yaml"), "--out", dist, "-q").CombinedOutput(); err != nil {
		t.Fatalf("first build: %v\n%s", err, out)
	}
	before, err := os.ReadFile(filepath.Join(dist, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	lut.WriteString("more,1\n")
	nets.WriteString("10.200.0.0/24,more\n")
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), lut.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nets.csv"), nets.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// 100 KiB: less than either table.
	cmd := exec.Command("sh", "-c", `ulimit -f 200 && exec "$0" "$@"`, bin, "build", filepath.Join(dir, "tables.yaml"), "--out", dist, "--progress", "never")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("build: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		"table a: writing into " + dist + ": file too large\n",
		"table geo: writing into " + dist + ": file too large\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), ".build-") || strings.Contains(string(out), "source ") {
		t.Errorf("output names a temporary file or the source:\n%s", out)
	}
	after, _ := os.ReadFile(filepath.Join(dist, tables.ManifestName))
	if !bytes.Equal(before, after) {
		t.Error("the manifest changed")
	}
	ents, _ := os.ReadDir(dist)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != ".lutbuild.lock" {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
