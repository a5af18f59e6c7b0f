package packaging_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// installed are the paths the package puts on the system (postinst adds
// /var/log/enrichd and the enrichd user).
var installed = []string{
	"/usr/bin/lut",
	"/usr/bin/enrichd",
	"/usr/lib/systemd/system/enrichd.service",
	"/etc/enrichd/enrichd.yaml",
	"/var/lib/lutkit/tables",
	"/usr/share/doc/lutkit/README.md",
	"/usr/share/doc/lutkit/enrichd.md",
	"/usr/share/doc/lutkit/examples/enrichd.yaml",
	"/var/log/enrichd",
}

func command(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func succeeds(name string, args ...string) bool { return exec.Command(name, args...).Run() == nil }

// TestDebianPackage builds the package with "make package", installs it
// with dpkg -i, checks the programs, the configuration (as the enrichd
// user the package creates), the conffile and the unit, then purges it and
// checks that nothing is left. It needs root and Debian's dpkg; it refuses
// to run where lutkit or an enrichd user is already installed.
func TestDebianPackage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian packages are for Linux")
	}
	for _, prog := range []string{"dpkg", "dpkg-deb", "dpkg-query", "make", "git", "runuser"} {
		if _, err := exec.LookPath(prog); err != nil {
			testfiles.Missing(t, prog+" (the package test builds and installs a Debian package)")
		}
	}
	if os.Geteuid() != 0 {
		testfiles.Missing(t, "root (the package test installs the package with dpkg -i)")
	}
	if succeeds("dpkg-query", "-W", "-f=${Status}", "lutkit") {
		st, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", "lutkit").Output()
		if strings.Contains(string(st), "installed") && !strings.Contains(string(st), "not-installed") {
			t.Fatalf("lutkit is installed on this machine (%s); this test installs and purges it: dpkg --purge lutkit first", st)
		}
	}
	if succeeds("getent", "passwd", "enrichd") {
		t.Fatal("an enrichd user exists on this machine; the package creates it and removes it on purge, so the test does not run here")
	}
	root, err := testfiles.Root()
	if err != nil {
		t.Fatal(err)
	}

	// The commit the Makefile builds in, read before a commit could land meanwhile.
	commit := strings.TrimSpace(command(t, root, "git", "rev-parse", "--short", "HEAD"))
	dist := t.TempDir()
	command(t, root, "make", "--no-print-directory", "package", "DIST="+dist)
	debs, _ := filepath.Glob(filepath.Join(dist, "lutkit_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make package made %v in %s", debs, dist)
	}
	deb := debs[0]
	info := command(t, root, "dpkg-deb", "--info", deb)
	for _, want := range []string{"Package: lutkit", "Depends: passwd", "postinst", "postrm", "prerm", "conffiles"} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb --info lacks %q:\n%s", want, info)
		}
	}

	t.Cleanup(func() {
		if succeeds("dpkg", "-s", "lutkit") {
			if out, err := exec.Command("dpkg", "--purge", "lutkit").CombinedOutput(); err != nil {
				t.Errorf("cleaning up: dpkg --purge lutkit: %v\n%s", err, out)
			}
		}
	})
	command(t, root, "dpkg", "-i", deb)
	for _, p := range installed {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("installed: %v", err)
		}
	}
	if conf := command(t, root, "dpkg-query", "-W", "-f=${Conffiles}", "lutkit"); !strings.Contains(conf, "/etc/enrichd/enrichd.yaml") {
		t.Errorf("conffiles: %q, want /etc/enrichd/enrichd.yaml", conf)
	}

	// The system user: no login, a system uid, home /var/lib/lutkit; the
	// log directory is its own.
	pw := strings.Split(strings.TrimSpace(command(t, root, "getent", "passwd", "enrichd")), ":")
	if len(pw) != 7 || pw[5] != "/var/lib/lutkit" || !strings.HasSuffix(pw[6], "nologin") || len(pw[2]) > 3 {
		t.Errorf("enrichd user: %q", pw)
	}
	if owner := command(t, root, "stat", "-c", "%U:%G %a", "/var/log/enrichd"); strings.TrimSpace(owner) != "enrichd:enrichd 750" {
		t.Errorf("/var/log/enrichd: %s", owner)
	}

	// The programs: versions with this checkout's commit; the installed
	// configuration checks, run as the enrichd user.
	for _, prog := range []string{"/usr/bin/lut", "/usr/bin/enrichd"} {
		if v := command(t, root, prog, "--version"); !strings.Contains(v, "commit "+commit) {
			t.Errorf("%s --version: %q, want commit %s", prog, v, commit)
		}
	}
	if out := command(t, "/", "runuser", "-u", "enrichd", "--", "/usr/bin/enrichd", "--config", "/etc/enrichd/enrichd.yaml", "--check-config"); !strings.Contains(out, "/etc/enrichd/enrichd.yaml: ok") {
		t.Errorf("enrichd --check-config: %q", out)
	}
	unit, err := os.ReadFile("/usr/lib/systemd/system/enrichd.service")
	if err != nil || !strings.Contains(string(unit), "ExecStart=/usr/bin/enrichd --config /etc/enrichd/enrichd.yaml") || !strings.Contains(string(unit), "User=enrichd") {
		t.Errorf("the unit does not start /usr/bin/enrichd as enrichd (%v):\n%s", err, unit)
	}

	// Purge: nothing of the package is left, nor the user and group.
	command(t, root, "dpkg", "--purge", "lutkit")
	for _, p := range append(installed, "/etc/enrichd", "/usr/share/doc/lutkit", "/var/lib/lutkit") {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after dpkg --purge", p)
		}
	}
	for _, db := range []string{"passwd", "group"} {
		if succeeds("getent", db, "enrichd") {
			t.Errorf("the enrichd %s entry is left after dpkg --purge", db)
		}
	}
	if st, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", "lutkit").Output(); strings.Contains(string(st), " installed") {
		t.Errorf("dpkg still lists lutkit: %s", st)
	}
}
