package tablebuild

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// copyExamples copies examples/ into a temporary directory and returns
// the path of its tables.yaml.
func copyExamples(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("../../examples", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../../examples", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "tables.yaml")
}

func statuses(r *Result) map[string]Status {
	m := map[string]Status{}
	for _, t := range r.Tables {
		m[t.Name] = t.Status
	}
	return m
}

func TestBuildIncremental(t *testing.T) {
	cfgPath := copyExamples(t)
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	ctx := context.Background()
	r1, err := Build(ctx, cfg, out, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range statuses(r1) {
		if s != StatusBuilt {
			t.Errorf("first build: %s %s", name, s)
		}
	}
	for _, e := range r1.Manifest.Tables {
		if !strings.HasPrefix(e.File, e.Name+"-"+e.SHA256[:16]) || e.Rows == 0 || e.FormatVersion == "" || len(e.Sources) == 0 || e.BuildTime.IsZero() {
			t.Errorf("manifest entry %+v", e)
		}
	}
	// Nothing changed: nothing is rebuilt.
	r2, err := Build(ctx, cfg, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range statuses(r2) {
		if s != StatusUnchanged {
			t.Errorf("second build: %s %s", name, s)
		}
	}
	// A changed source rebuilds its table only; changed options too.
	src := filepath.Join(filepath.Dir(cfgPath), "sources", "customers.csv")
	f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("9,aaaaaaaaaaaaaaa,Ann,Lee,Acme,Peru,ann@example.com\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Tables {
		if cfg.Tables[i].Name == "services" {
			cfg.Tables[i].LUT.FoldCase = false
		}
	}
	r3, err := Build(ctx, cfg, out, Options{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	st := statuses(r3)
	if st["customers"] != StatusBuilt || st["services"] != StatusBuilt || st["sites"] != StatusUnchanged {
		t.Errorf("third build: %v", st)
	}
	if e := r3.Manifest.Table("customers"); e == nil || e.Rows != 9 {
		t.Errorf("customers after the change: %+v", e)
	}
	res, err := tables.VerifyDir(out)
	if err != nil || len(res) != 3 {
		t.Fatalf("tables.VerifyDir: %v %v", res, err)
	}
	// A damaged artifact fails tables.VerifyDir, naming the table and the file.
	e := r3.Manifest.Table("customers")
	p := filepath.Join(out, e.File)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = tables.VerifyDir(out)
	if err == nil || !strings.Contains(err.Error(), "table customers: "+p+": digest mismatch") {
		t.Errorf("tables.VerifyDir of a damaged artifact: %v", err)
	}
	// Forced: rebuilt even though unchanged, and the damage repaired.
	r4, err := Build(ctx, cfg, out, Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(r4); st["sites"] != StatusBuilt {
		t.Errorf("forced build: %v", st)
	}
	if _, err := tables.VerifyDir(out); err != nil {
		t.Errorf("after the forced build: %v", err)
	}
}

// TestBuildFailures: every failing table is listed, the others are built,
// and the previous manifest stays in place.
func TestBuildFailures(t *testing.T) {
	cfgPath := copyExamples(t)
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Build(context.Background(), cfg, out, Options{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(out, tables.ManifestName))
	dir := filepath.Dir(cfgPath)
	bad := `tables:
  - name: customers
    sources: [sources/customers.csv]
    key: NoSuchColumn
  - name: missing
    sources: [sources/nope.csv]
    key: id
  - name: services
    sources: [{path: sources/services.tsv, format: tsv}]
    key: [host, port]
  - name: badips
    kind: mmdb
    sources:
      - path: sources/customers.csv
        network_column: Email
`
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg2, err := LoadConfig(filepath.Join(dir, "bad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Build(context.Background(), cfg2, out, Options{Jobs: 3})
	if err == nil {
		t.Fatal("build with failing tables succeeded")
	}
	msg := err.Error()
	for _, want := range []string{
		`table customers: `, `key column "NoSuchColumn" is not in the source`,
		`table missing: source ` + filepath.Join(dir, "sources/nope.csv"),
		`table badips: `,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if len(res.Failed()) != 3 || statuses(res)["services"] != StatusBuilt {
		t.Errorf("statuses %v", statuses(res))
	}
	after, _ := os.ReadFile(filepath.Join(out, tables.ManifestName))
	if string(before) != string(after) {
		t.Error("a failed build replaced the manifest")
	}
	t.Logf("failures:\n%s", msg)
}

// TestBuildNamesTheSourceOnce: an error that names its source already (a
// bad row, file:line:column) is not prefixed with the source again;
// errors of the compiler itself are.
func TestBuildNamesTheSourceOnce(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"bad.csv": "k,v\na,1\nb,\xff\n", "ok.csv": "k,v\na,1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := ParseConfig(filepath.Join(dir, "tables.yaml"), []byte(`tables:
  - name: badrow
    sources: [bad.csv]
    key: k
  - name: nokey
    sources: [ok.csv]
    key: nope
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Build(context.Background(), cfg, filepath.Join(dir, "dist"), Options{})
	if err == nil || len(res.Failed()) != 2 {
		t.Fatalf("build: %v", err)
	}
	bad, ok := filepath.Join(dir, "bad.csv"), filepath.Join(dir, "ok.csv")
	for _, r := range res.Tables {
		msg := r.Err.Error()
		switch r.Name {
		case "badrow":
			if !strings.Contains(msg, bad+":3:3: invalid UTF-8") || strings.Contains(msg, "source "+bad) {
				t.Errorf("badrow: %s", msg)
			}
		case "nokey":
			if !strings.HasPrefix(msg, "table nokey: source "+ok+": ") || !strings.Contains(msg, `key column "nope" is not in the source`) {
				t.Errorf("nokey: %s", msg)
			}
		}
	}
}

// TestBuildThroughLinks: an artifact's name in the output directory that
// is a symbolic link (to a file beside it, absolute, relative, a chain of
// two links, through a linked directory, or dangling) stays a link: the
// file it names gets the artifact, readable by all, and a reader that
// opened the file it held before keeps reading that. An output directory
// that is a link is built into the directory it names.
func TestBuildThroughLinks(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	src := t.TempDir()
	must(os.WriteFile(filepath.Join(src, "k.csv"), []byte("k,v\na,1\nb,2\n"), 0o644))
	must(os.WriteFile(filepath.Join(src, "nets.csv"), []byte("network,site\n10.0.0.0/8,x\n"), 0o644))
	cfg, err := ParseConfig(filepath.Join(src, "tables.yaml"), []byte(`tables:
  - {name: kv, sources: [k.csv], key: k}
  - name: nets
    kind: mmdb
    sources:
      - {path: nets.csv, type: networks, network_column: network}
`))
	must(err)
	ctx := context.Background()
	opts := Options{BuildTime: time.Unix(1700000000, 0)} // the same bytes every build
	// A build into a plain directory names the artifacts and their bytes.
	plain := filepath.Join(t.TempDir(), "dist")
	r, err := Build(ctx, cfg, plain, opts)
	must(err)
	want := map[string][]byte{}
	for _, e := range r.Manifest.Tables {
		b, err := os.ReadFile(filepath.Join(plain, e.File))
		must(err)
		want[e.File] = b
	}

	for _, c := range []struct {
		name string
		// link makes the link at out/NAME and returns the file it names.
		link func(out, store, name string) string
		old  bool // the file the link names exists before the build
	}{
		{"link beside", func(out, _, n string) string {
			must(os.Symlink(n+".v1", filepath.Join(out, n)))
			return filepath.Join(out, n+".v1")
		}, true},
		{"absolute link", func(out, store, n string) string {
			must(os.Symlink(filepath.Join(store, n), filepath.Join(out, n)))
			return filepath.Join(store, n)
		}, true},
		{"relative link", func(out, store, n string) string {
			must(os.Symlink("../store/"+n, filepath.Join(out, n)))
			return filepath.Join(store, n)
		}, true},
		{"chain of two links", func(out, store, n string) string {
			must(os.Symlink("../hops/"+n, filepath.Join(out, n)))
			must(os.MkdirAll(filepath.Join(out, "..", "hops"), 0o755))
			must(os.Symlink("../store/"+n, filepath.Join(out, "..", "hops", n)))
			return filepath.Join(store, n)
		}, true},
		{"link through a linked directory", func(out, store, n string) string {
			must(os.Symlink("../storelink/"+n, filepath.Join(out, n)))
			return filepath.Join(store, n)
		}, true},
		{"dangling link", func(out, store, n string) string {
			must(os.Symlink("../store/"+n, filepath.Join(out, n)))
			return filepath.Join(store, n)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			out, store := filepath.Join(root, "out"), filepath.Join(root, "store")
			must(os.Mkdir(out, 0o755))
			must(os.Mkdir(store, 0o755))
			must(os.Symlink("store", filepath.Join(root, "storelink")))
			targets := map[string]string{}
			olds := map[string]*os.File{}
			for n := range want {
				targets[n] = c.link(out, store, n)
				if c.old {
					must(os.WriteFile(targets[n], []byte("the previous file"), 0o644))
					f, err := os.Open(targets[n])
					must(err)
					defer f.Close()
					olds[n] = f
				}
			}
			if _, err := Build(ctx, cfg, out, opts); err != nil {
				t.Fatal(err)
			}
			for n, b := range want {
				if fi, err := os.Lstat(filepath.Join(out, n)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("%s: the link was replaced (%v)", n, err)
				}
				got, err := os.ReadFile(targets[n])
				if err != nil || !bytes.Equal(got, b) {
					t.Errorf("%s: the file the link names holds %.20q, %v; want the artifact", n, got, err)
				}
				if fi, err := os.Lstat(targets[n]); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("%s: the file the link names: %v, %v; want 0644", n, fi, err)
				}
				if f := olds[n]; f != nil {
					if b, err := io.ReadAll(f); err != nil || string(b) != "the previous file" {
						t.Errorf("%s: the file opened before reads %.20q, %v", n, b, err)
					}
				}
			}
			if _, err := tables.VerifyDir(out); err != nil {
				t.Error(err)
			}
			for _, d := range []string{out, store} {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), ".") && e.Name() != ".lutbuild.lock" {
						t.Errorf("left in %s: %s", d, e.Name())
					}
				}
			}
		})
	}

	t.Run("output directory that is a link", func(t *testing.T) {
		root := t.TempDir()
		must(os.Mkdir(filepath.Join(root, "real"), 0o755))
		must(os.Symlink("real", filepath.Join(root, "dist")))
		if _, err := Build(ctx, cfg, filepath.Join(root, "dist"), opts); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "dist")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced (%v)", err)
		}
		for n, b := range want {
			fi, err := os.Lstat(filepath.Join(root, "real", n))
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("%s in the directory the link names: %v", n, err)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "real", n)); !bytes.Equal(got, b) {
				t.Errorf("%s: %.20q, want the artifact", n, got)
			}
		}
		if _, err := tables.VerifyDir(filepath.Join(root, "real")); err != nil {
			t.Error(err)
		}
	})
}
