package main

import (
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
