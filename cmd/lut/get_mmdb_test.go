package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// TestGetMMDBNonFinite: lut get prints a record holding a NaN or infinite
// float (which other writers put in files lut did not build) with null in
// its place, as enrichd's lookup API does, and goes on to the next
// address, instead of stopping at an error of the JSON encoder.
func TestGetMMDBNonFinite(t *testing.T) {
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "Acme-Sensors", IncludeReservedNetworks: true, Description: map[string]string{"en": "t"},
		Languages: []string{"en"}, RecordSize: 28, BuildEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, rec := range map[string]mmdbtype.Map{
		"10.1.0.0/16":    {"name": mmdbtype.String("a"), "lat": mmdbtype.Float64(math.NaN()), "gain": mmdbtype.Float32(float32(math.Inf(1)))},
		"10.2.0.0/16":    {"name": mmdbtype.String("b"), "lat": mmdbtype.Float64(52.5)},
		"2a00:1450::/32": {"name": mmdbtype.String("c<&>")},
	} {
		_, n, _ := net.ParseCIDR(cidr)
		if err := w.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "sensors.mmdb")
	f, err := os.Create(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "get", db, "10.1.2.3", "10.2.0.1", "2a00:1450::1")
	want := `{"ip":"10.1.2.3","network":"10.1.0.0/16","record":{"gain":null,"lat":null,"name":"a"}}` + "\n" +
		`{"ip":"10.2.0.1","network":"10.2.0.0/16","record":{"lat":52.5,"name":"b"}}` + "\n" +
		`{"ip":"2a00:1450::1","network":"2a00:1450::/32","record":{"name":"c<&>"}}` + "\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("get: exit %d\n%s\nwant\n%s%s", code, stdout, want, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %s", l)
		}
	}
}

// TestGetMMDBDamaged: an address whose lookup meets damage in the search
// tree (a file that opens, but whose tree points past its data) is
// reported with the file's name and that lut verify checks the whole
// file, exit status 2; the addresses the damage does not touch are
// printed.
func TestGetMMDBDamaged(t *testing.T) {
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "Acme-Sites", Description: map[string]string{"en": "t"},
		Languages: []string{"en"}, IPVersion: 4, RecordSize: 32, BuildEpoch: 1, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, site := range map[string]string{"1.0.0.0/8": "low", "200.0.0.0/8": "high"} {
		_, n, _ := net.ParseCIDR(cidr)
		if err := w.Insert(n, mmdbtype.Map{"site": mmdbtype.String(site)}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// The root's right record (addresses 128.0.0.0 and up), 32 bits, now
	// points far past the data section.
	binary.BigEndian.PutUint32(b[4:8], 0x7fffffff)
	db := filepath.Join(t.TempDir(), "sites.mmdb")
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "get", db, "1.2.3.4", "200.1.2.3")
	want := "lut: " + db + ": 200.1.2.3: invalid MMDB: search tree points past the data section (the file is damaged: lut verify " + db + " checks all of it)\n"
	if code != 2 || stderr != want || stdout != `{"ip":"1.2.3.4","network":"1.0.0.0/8","record":{"site":"low"}}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, stdout, stderr, want)
	}
	if _, _, code := run(t, "verify", db); code != 1 {
		t.Fatalf("verify: exit %d, want 1", code)
	}
}
