package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLicensesBinary runs "lut licenses" of the built program: every
// module "go version -m" finds linked into it is listed with a licence
// (none unknown), and --full prints their texts.
func TestLicensesBinary(t *testing.T) {
	bin := lutBinary(t)
	mv, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "licenses").Output()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(string(out), "\n")[2:] {
		if f := strings.Fields(line); len(f) >= 3 {
			listed[f[0]+" "+f[1]] = f[2]
		}
	}
	if !strings.HasPrefix(string(out), "lutkit: Apache-2.0") {
		t.Errorf("lut licenses does not start with lutkit's licence:\n%s", out)
	}
	deps := 0
	for _, line := range strings.Split(string(mv), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "dep" {
			deps++
			if lic := listed[f[1]+" "+f[2]]; lic == "" || lic == "unknown" {
				t.Errorf("module %s %s: licence %q in lut licenses", f[1], f[2], lic)
			}
		}
	}
	if deps < 10 || len(listed) != deps {
		t.Errorf("go version -m lists %d modules, lut licenses %d", deps, len(listed))
	}
	full, err := exec.Command(bin, "licenses", "--full").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"==== github.com/spf13/cobra v", "Apache License", "Permission is hereby granted"} {
		if !strings.Contains(string(full), want) {
			t.Errorf("lut licenses --full lacks %q", want)
		}
	}
}
