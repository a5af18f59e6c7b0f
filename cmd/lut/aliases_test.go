package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIPv4AliasesFlag(t *testing.T) {
	dir := t.TempDir()
	v4 := filepath.Join(dir, "v4.csv")
	writeFile(t, v4, "cidr,site\n1.2.3.0/24,v4\n")
	relay := filepath.Join(dir, "relay.csv")
	writeFile(t, relay, "site,cidr\ndoc,2001:db8::/32\nrelay,2002::/16\n")
	compile := func(out string, args ...string) (string, error) {
		_, stderr, err := runLut(t, append([]string{"compile", "--out", filepath.Join(dir, out), "--network", "cidr", "--build-epoch", "1700000000"}, args...)...)
		return stderr, err
	}
	stderr, err := compile("plain.mmdb", v4)
	if err != nil || !strings.Contains(stderr, "custom profile, IPv4 aliases,") {
		t.Fatalf("plain: %v\n%s", err, stderr)
	}
	stdout, _, _ := runLut(t, "inspect", filepath.Join(dir, "plain.mmdb"))
	if !strings.Contains(stdout, "ipv4 aliases:   ::ffff:0:0/96, 2001::/32, 2002::/16 lead to the IPv4 data") {
		t.Errorf("inspect plain:\n%s", stdout)
	}
	stderr, err = compile("auto.mmdb", v4, relay)
	if err != nil || !strings.Contains(stderr, "lut: warning: built without IPv4 aliases") ||
		!strings.Contains(stderr, relay+":3:7: 2002::/16 overlaps 2002::/16") || !strings.Contains(stderr, "no IPv4 aliases,") {
		t.Fatalf("auto: %v\n%s", err, stderr)
	}
	stdout, _, _ = runLut(t, "inspect", "--json", filepath.Join(dir, "auto.mmdb"))
	if !strings.Contains(stdout, `"ipv4_aliases": []`) {
		t.Errorf("inspect --json auto:\n%s", stdout)
	}
	stdout, _, _ = runLut(t, "get", filepath.Join(dir, "auto.mmdb"), "2002:102:304::1")
	if !strings.Contains(stdout, `"site":"relay"`) {
		t.Errorf("get 6to4 address: %s", stdout)
	}
	_, err = compile("on.mmdb", "--ipv4-aliases", "on", v4, relay)
	var ee *exitError // a bad row: status 1, at the network's line and column
	if !errors.As(err, &ee) || ee.code != 1 || !strings.HasPrefix(err.Error(), relay+":3:7: 2002::/16 has data in 2002::/16") {
		t.Fatalf("on: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "on.mmdb")); err == nil {
		t.Error("a failed build left a file")
	}
	stderr, err = compile("off.mmdb", "--ipv4-aliases", "off", v4)
	if err != nil || !strings.Contains(stderr, "no IPv4 aliases,") {
		t.Fatalf("off: %v\n%s", err, stderr)
	}
	_, err = compile("bad.mmdb", "--ipv4-aliases", "sometimes", v4)
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.msg, "--ipv4-aliases") {
		t.Fatalf("bad mode: %v", err)
	}
}
