package delta

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/sample"
	"github.com/lutkit/lutkit/reader"
)

// customersTable compiles rows 1..n of the customers sample, edited, and
// returns the table's bytes.
func customersTable(t testing.TB, n int, onDup string, edit func(int) ([]string, bool)) []byte {
	t.Helper()
	dir := t.TempDir()
	csv := filepath.Join(dir, "c.csv")
	f, err := os.Create(csv)
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		edit = func(int) ([]string, bool) { return nil, false }
	}
	if err := sample.WriteCustomersEdited(f, n, 1, edit); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src, err := source.Open(csv, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := filepath.Join(dir, "c.lut")
	if _, err := compile.File(src, out, compile.Options{Key: []string{"Customer Id"}, OnDuplicate: onDup}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// changeEvery edits every step-th row: its e-mail grows by a varying
// number of bytes, so every later record moves.
func changeEvery(step int) func(int) ([]string, bool) {
	return func(i int) ([]string, bool) {
		if i%step != 0 {
			return nil, false
		}
		f := sample.NewCustomer(1, i).Fields()
		f[9] = fmt.Sprintf("changed%0*d-%s", 1+i%7, i, f[9])
		return f, true
	}
}

// roundTrip encodes base -> target, applies the delta to base in a real
// file and checks the result is target, byte for byte.
func roundTrip(t *testing.T, base, target []byte) Stats {
	t.Helper()
	var d bytes.Buffer
	st, err := Encode(&d, base, target)
	if err != nil {
		t.Fatal(err)
	}
	if int64(d.Len()) != st.Size {
		t.Fatalf("Stats.Size %d, wrote %d", st.Size, d.Len())
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out.lut"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	h, err := Apply(out, bytes.NewReader(base), int64(len(base)), d.Bytes(), int64(len(target)))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, target) {
		t.Fatalf("the rebuilt file (%d bytes) differs from the target (%d bytes)", len(got), len(target))
	}
	if h.Target != sha256.Sum256(target) || h.Base != sha256.Sum256(base) {
		t.Fatal("the header's digests are not the files'")
	}
	if st.Derived > 0 {
		if _, err := reader.OpenBytes(got); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestDeltaChangedRows(t *testing.T) {
	const n = 50000
	base := customersTable(t, n, "", nil)
	target := customersTable(t, n, "", changeEvery(n/100))
	st := roundTrip(t, base, target)
	t.Logf("%d rows, 100 changed: table %d bytes, delta %d bytes (%.3f%%), %d ops, %d literal, %d derived",
		n, len(target), st.Size, 100*float64(st.Size)/float64(len(target)), st.Ops, st.Literal, st.Derived)
	if st.Derived == 0 {
		t.Fatal("the SLOTS section was not derived")
	}
	if st.Size*100 >= int64(len(target)) {
		t.Fatalf("delta of %d bytes is not under 1%% of the %d-byte table", st.Size, len(target))
	}
}

func TestDeltaAddedRemovedRows(t *testing.T) {
	const n = 20000
	base := customersTable(t, n, "", nil)
	// Rows 1000..1009 dropped and 50 more at the end: a new key set, a
	// new MPHF.
	target := customersTable(t, n+50, "", func(i int) ([]string, bool) {
		if i >= 1000 && i < 1010 {
			return nil, true
		}
		return nil, false
	})
	st := roundTrip(t, base, target)
	if st.Derived == 0 {
		t.Fatal("the SLOTS section was not derived")
	}
}

func TestDeltaDuplicatePolicies(t *testing.T) {
	const n = 5000
	for _, pol := range []string{"first", "last"} {
		t.Run(pol, func(t *testing.T) {
			// Row 77 repeats row 10's key with other values: a record no
			// slot points at.
			dup := func(i int) ([]string, bool) {
				if i != 77 {
					return nil, false
				}
				f := sample.NewCustomer(1, 77).Fields()
				f[1] = sample.NewCustomer(1, 10).ID
				return f, true
			}
			base := customersTable(t, n, pol, nil)
			target := customersTable(t, n, pol, dup)
			if st := roundTrip(t, base, target); st.Derived == 0 {
				t.Fatal("the SLOTS section was not derived")
			}
		})
	}
}

func TestDeltaNotATable(t *testing.T) {
	base := make([]byte, 100000)
	x := uint64(1)
	for i := range base {
		x = x*6364136223846793005 + 1442695040888963407
		base[i] = byte(x >> 56)
	}
	target := append(append([]byte("new start"), base[5000:60000]...), []byte("tail")...)
	if st := roundTrip(t, base, target); st.Derived != 0 || st.Copied < 50000 {
		t.Fatalf("stats %+v", st)
	}
	roundTrip(t, nil, []byte("x"))
}

// TestApplyRejects feeds Apply broken deltas: each is an error.
func TestApplyRejects(t *testing.T) {
	base := customersTable(t, 2000, "", nil)
	target := customersTable(t, 2000, "", changeEvery(100))
	var d bytes.Buffer
	if _, err := Encode(&d, base, target); err != nil {
		t.Fatal(err)
	}
	good := d.Bytes()
	apply := func(d []byte, b []byte, max int64) error {
		out, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		_, err = Apply(out, bytes.NewReader(b), int64(len(b)), d, max)
		return err
	}
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	cases := map[string]error{
		"empty":          apply(nil, base, 1<<30),
		"magic":          apply(flip(0), base, 1<<30),
		"header sum":     apply(flip(20), base, 1<<30),
		"body":           apply(flip(len(good)-1), base, 1<<30),
		"truncated":      apply(good[:len(good)-1], base, 1<<30),
		"other base":     apply(good, base[:len(base)-8], 1<<30),
		"over the limit": apply(good, base, int64(len(target)-1)),
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: Apply accepted it", name)
		}
	}
	if err := apply(good, base, 1<<30); err != nil {
		t.Fatal(err)
	}
}

// TestApplyWriteError: an output that cannot be written (a full disk; a
// file open read-only here) while a literal is copied fails Apply with
// the write's error, not as a delta that ends early.
func TestApplyWriteError(t *testing.T) {
	base := make([]byte, 100000)
	target := make([]byte, 3<<20) // new bytes: literals past the writer's buffer
	x := uint64(1)
	for i := range target {
		x = x*6364136223846793005 + 1442695040888963407
		target[i] = byte(x >> 56)
		if i < len(base) {
			base[i] = byte(x >> 48)
		}
	}
	var d bytes.Buffer
	if _, err := Encode(&d, base, target); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	_, err = Apply(out, bytes.NewReader(base), int64(len(base)), d.Bytes(), 1<<30)
	if err == nil || errors.Is(err, errTruncated) || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Apply into a read-only file: %v", err)
	}
	t.Log(err)
}
