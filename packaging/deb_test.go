package packaging_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
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
	"/usr/share/doc/lutkit/copyright",
	"/etc/logrotate.d/enrichd",
	"/usr/share/man/man1/lut.1.gz",
	"/usr/share/man/man1/lut-compile.1.gz",
	"/usr/share/man/man1/enrichd.1.gz",
	"/usr/share/bash-completion/completions/lut",
	"/usr/share/bash-completion/completions/enrichd",
	"/usr/share/zsh/vendor-completions/_lut",
	"/usr/share/fish/vendor_completions.d/enrichd.fish",
	"/usr/share/doc/lutkit/third_party_licenses.txt",
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
	if conf := command(t, root, "dpkg-query", "-W", "-f=${Conffiles}", "lutkit"); !strings.Contains(conf, "/etc/enrichd/enrichd.yaml") || !strings.Contains(conf, "/etc/logrotate.d/enrichd") {
		t.Errorf("conffiles: %q, want /etc/enrichd/enrichd.yaml and /etc/logrotate.d/enrichd", conf)
	}

	checkCopyright(t)
	checkUnit(t)
	checkManAndCompletions(t)
	checkLogrotate(t)

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

// copyrightCheck parses a debian/copyright file in the machine-readable
// format with python3-debian's strict parser and prints the licence of
// each Files paragraph and of each stand-alone License paragraph.
const copyrightCheck = `
import sys
from debian.copyright import Copyright
c = Copyright(open(sys.argv[1]), strict=True)
for p in c.all_files_paragraphs():
    print("files", " ".join(p.files), p.license.synopsis)
for p in c.all_license_paragraphs():
    print("license", p.license.synopsis, len(p.license.text.splitlines()))
`

// checkCopyright checks the installed /usr/share/doc/lutkit/copyright:
// Debian's parser of the machine-readable format reads it, every file is
// under Apache-2.0 with its licence paragraph present, and the third-party
// licence list it names is installed and lists the modules.
func checkCopyright(t *testing.T) {
	t.Helper()
	const path = "/usr/share/doc/lutkit/copyright"
	if _, err := os.Stat("/usr/lib/python3/dist-packages/debian/copyright.py"); err != nil {
		testfiles.Missing(t, "python3-debian (the package test parses the installed copyright file)")
	}
	out := command(t, "/", "/usr/bin/python3", "-c", copyrightCheck, path)
	if !strings.Contains(out, "files * Apache-2.0\n") || !strings.Contains(out, "license Apache-2.0 ") {
		t.Errorf("%s parsed as:\n%s", path, out)
	}
	b, err := os.ReadFile("/usr/share/doc/lutkit/third_party_licenses.txt")
	if err != nil || !strings.Contains(string(b), "github.com/spf13/cobra v") || !strings.Contains(string(b), "==== ") {
		t.Errorf("third_party_licenses.txt (%v) does not list the modules", err)
	}
	if out := command(t, "/", "/usr/bin/lut", "licenses"); !strings.Contains(out, "lutkit: Apache-2.0") || strings.Contains(out, "unknown") {
		t.Errorf("lut licenses of the installed lut:\n%s", out)
	}
}

// checkUnit runs systemd-analyze on the installed unit: "verify" finds
// no problem (its binaries, user, man page and directives), and
// "security" rates its sandbox below 4.0 (OK); the unit is Type=notify
// with a watchdog.
func checkUnit(t *testing.T) {
	t.Helper()
	const unit = "/usr/lib/systemd/system/enrichd.service"
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		testfiles.Missing(t, "systemd-analyze (the package test checks the unit; Debian package systemd)")
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nType=notify\n", "\nWatchdogSec=", "\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n", "\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the unit lacks %q", strings.TrimSpace(want))
		}
	}
	if out, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
	}
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for enrichd.service: ([0-9.]+) (\w+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("systemd-analyze security: no overall level:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(m[1], 64); level >= 4.0 || m[2] != "OK" {
		t.Errorf("systemd-analyze security: %s %s, want below 4.0 (OK):\n%s", m[1], m[2], out)
	}
	t.Logf("systemd-analyze security: %s %s", m[1], m[2])
}

// checkManAndCompletions: the installed man pages render with man (one
// per command, naming its flags), and bash loads the completions and
// completes lut's commands through the installed lut.
func checkManAndCompletions(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("man"); err != nil {
		testfiles.Missing(t, "man (the package test renders the man pages; Debian package man-db)")
	}
	for page, want := range map[string]string{"lut": "lut-compile(1)", "lut-compile": "--on-duplicate", "enrichd": "--check-config", "lut-diff": "--exit-code"} {
		cmd := exec.Command("man", "-P", "cat", page)
		cmd.Env = append(os.Environ(), "MANWIDTH=100", "LC_ALL=C.UTF-8")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("man %s (%v) lacks %q:\n%.600s", page, err, want, out)
		}
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("no bash")
	}
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err != nil {
		testfiles.Missing(t, "bash-completion (the completions use its helpers; Debian package bash-completion)")
	}
	script := `source /usr/share/bash-completion/bash_completion && source /usr/share/bash-completion/completions/lut && complete -p lut &&
COMP_WORDS=(lut comp); COMP_CWORD=1; COMP_LINE="lut comp"; COMP_POINT=${#COMP_LINE}; __start_lut lut comp lut; printf '%s\n' "${COMPREPLY[@]}"`
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "complete -o default -F __start_lut lut") || !strings.Contains(string(out), "compile") {
		t.Errorf("bash completion of lut (%v):\n%s", err, out)
	}
}

// checkLogrotate rotates the installed output file with logrotate and the
// installed snippet: the file is renamed, a new one created for the
// enrichd user, and the postrotate script runs without error.
func checkLogrotate(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("logrotate"); err != nil {
		testfiles.Missing(t, "logrotate (the package test rotates with the installed snippet)")
	}
	const out = "/var/log/enrichd/enriched.json"
	if err := os.WriteFile(out, []byte("{\"n\":1}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "status")
	res, err := exec.Command("logrotate", "-v", "-f", "-s", state, "/etc/logrotate.d/enrichd").CombinedOutput()
	if err != nil || strings.Contains(string(res), "error:") {
		t.Fatalf("logrotate: %v\n%s", err, res)
	}
	if b, err := os.ReadFile(out + ".1"); err != nil || string(b) != "{\"n\":1}\n" {
		t.Errorf("rotated file: %q %v\n%s", b, err, res)
	}
	if st := command(t, "/", "stat", "-c", "%U:%G %a %s", out); strings.TrimSpace(st) != "enrichd:enrichd 640 0" {
		t.Errorf("new %s: %s", out, st)
	}
	os.Remove(out)
	os.Remove(out + ".1")
}
