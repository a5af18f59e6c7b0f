package mmdb_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// smallMMDB writes a few networks with map records.
func smallMMDB(t *testing.T) []byte {
	t.Helper()
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "Test-Corrupt", Description: map[string]string{"en": "t"}, Languages: []string{"en"}, RecordSize: 24, BuildEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, cidr := range []string{"1.0.0.0/8", "81.2.69.0/24", "2a00:1450::/32"} {
		_, n, _ := net.ParseCIDR(cidr)
		rec := mmdbtype.Map{"site": mmdbtype.String(fmt.Sprintf("site-%d", i)), "n": mmdbtype.Uint32(i)}
		if err := w.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCorruptionMarker: every error Open, OpenBytes and Verify return
// about a damaged file unwraps to the one corruption marker, which is
// also the .lut reader's.
func TestCorruptionMarker(t *testing.T) {
	if !errors.Is(mmdb.ErrCorrupt, format.ErrCorrupt) {
		t.Fatal("mmdb.ErrCorrupt and format.ErrCorrupt differ")
	}
	good := smallMMDB(t)
	if _, err := mmdb.OpenBytes(good, mmdb.WithVerify()); err != nil {
		t.Fatal(err)
	}
	check := func(b []byte, what string) {
		r, err := mmdb.OpenBytes(b, mmdb.WithVerify())
		if err == nil {
			r.Close()
			return // the damage hit bytes no check covers (padding)
		}
		if !errors.Is(err, mmdb.ErrCorrupt) {
			t.Fatalf("%s: error %q does not unwrap to ErrCorrupt", what, err)
		}
		if r, err := mmdb.OpenBytes(b); err == nil {
			if verr := r.Verify(); verr != nil && !errors.Is(verr, mmdb.ErrCorrupt) {
				t.Fatalf("%s: Verify error %q does not unwrap to ErrCorrupt", what, verr)
			}
			r.Close()
		} else if !errors.Is(err, mmdb.ErrCorrupt) {
			t.Fatalf("%s: error %q does not unwrap to ErrCorrupt", what, err)
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		check(b, fmt.Sprintf("byte %d flipped", i))
	}
	for n := 0; n < len(good); n++ {
		check(good[:n], fmt.Sprintf("cut at %d", n))
	}
	// From a file too, the path named once.
	p := filepath.Join(t.TempDir(), "bad.mmdb")
	if err := os.WriteFile(p, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mmdb.Open(p); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("truncated file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.mmdb")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mmdb.Open(empty); !errors.Is(err, mmdb.ErrCorrupt) {
		t.Fatalf("empty file: %v", err)
	}
}

// TestCorruptErrorIsShared: a record that cannot be decoded gives the
// shared *CorruptError, with its offset.
func TestCorruptErrorIsShared(t *testing.T) {
	var ce *format.CorruptError
	err := fmt.Errorf("wrapped: %w", &mmdb.CorruptError{What: "MMDB section", Off: 7, Msg: "x"})
	if !errors.As(err, &ce) || ce.Off != 7 || !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("%v", err)
	}
}
