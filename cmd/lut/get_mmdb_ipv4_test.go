package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGetMMDBIPv6InIPv4Only: lut get of an IPv6 address in an .mmdb of
// IPv4 networks only (lut compile --ip-version 4) says the address is not
// found in the file, which holds IPv4 networks only, and exits 1 as for
// an address not found; the IPv4 addresses given with it are printed.
func TestGetMMDBIPv6InIPv4Only(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "nets.csv")
	writeFile(t, src, "network,name\n10.0.0.0/8,a\n")
	db := filepath.Join(dir, "v4.mmdb")
	if _, stderr, code := run(t, "compile", "--network", "network", "--ip-version", "4", "--out", db, src); code != 0 {
		t.Fatalf("compile --ip-version 4: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := run(t, "get", db, "2001:db8::1", "10.1.2.3")
	want := "lut: 2001:db8::1 not found in " + db + ": the database holds IPv4 networks only (ip_version 4)\n"
	if code != 1 || stderr != want || !strings.Contains(stdout, `{"ip":"10.1.2.3","network":"10.0.0.0/8","record":{"name":"a"}}`) {
		t.Fatalf("get of an IPv6 address: exit %d, stdout %q, stderr %q; want exit 1, the IPv4 address's record and stderr %q", code, stdout, stderr, want)
	}
}
