package enrichd

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needTool returns the path of a sender; in CI a missing tool fails the
// test, locally it skips.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (install the Debian package %s)", name, pkg)
		}
		t.Skipf("%s not found (apt-get install %s)", name, pkg)
	}
	return p
}

var seqRE = regexp.MustCompile(`seq=(\d+)`)

// checkExactlyOnce checks that lines hold seq 0..n-1 once each, each
// enriched with its customer row (cust = seq%rows+1, version 1).
func checkExactlyOnce(t *testing.T, lines []string, n, rows int) {
	t.Helper()
	seen := make([]int, n)
	for _, l := range lines {
		m := decode(t, l)
		msg, _ := m["message"].(string)
		sm := seqRE.FindStringSubmatch(msg)
		if sm == nil {
			t.Errorf("no seq in %s", l)
			continue
		}
		seq, _ := strconv.Atoi(sm[1])
		if seq >= n {
			t.Errorf("unexpected seq %d", seq)
			continue
		}
		seen[seq]++
		cust := seq%rows + 1
		if got := get(m, "customer.Customer Id"); got != fmt.Sprintf("C%d-1", cust) {
			t.Errorf("seq %d: customer id %v, want C%d-1: %s", seq, got, cust, l)
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("seq %d arrived %d times", i, c)
		}
	}
}

func TestLogger(t *testing.T) {
	logger := needTool(t, "logger", "bsdutils")
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 100, 1)
	out := filepath.Join(dir, "out.json")
	r := startDaemon(t, testConfig(t, dir, out))
	_, tcpPort, _ := net.SplitHostPort(r.d.Addr("tcp").String())
	_, udpPort, _ := net.SplitHostPort(r.d.Addr("udp").String())
	modes := []struct {
		name string
		args []string
	}{
		{"udp-5424", []string{"--udp", "--port", udpPort, "--rfc5424"}},
		{"udp-3164", []string{"--udp", "--port", udpPort, "--rfc3164"}},
		{"tcp-newline-3164", []string{"--tcp", "--port", tcpPort, "--rfc3164"}},
		{"tcp-newline-5424", []string{"--tcp", "--port", tcpPort, "--rfc5424"}},
		{"tcp-octet-5424", []string{"--tcp", "--port", tcpPort, "--octet-count", "--rfc5424"}},
		{"tcp-octet-3164", []string{"--tcp", "--port", tcpPort, "--octet-count", "--rfc3164"}},
	}
	const per = 5
	seq := 0
	for _, m := range modes {
		for range per {
			msg := fmt.Sprintf("seq=%d cust=%d src=8.8.8.8 mode=%s", seq, seq%100+1, m.name)
			args := append([]string{"--server", "127.0.0.1", "-t", "myapp"}, m.args...)
			args = append(args, msg)
			if outb, err := exec.Command(logger, args...).CombinedOutput(); err != nil {
				t.Fatalf("logger %v: %v\n%s", args, err, outb)
			}
			seq++
			if strings.HasPrefix(m.name, "udp") {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}
	waitLines(t, out, seq, 20*time.Second)
	time.Sleep(100 * time.Millisecond) // for any line written twice
	lines := readLines(t, out)
	checkExactlyOnce(t, lines, seq, 100)
	for _, l := range lines {
		m := decode(t, l)
		if get(m, "log.syslog.appname") != "myapp" || get(m, "host.name") == nil || hasTag(m, "_malformed") {
			t.Errorf("header not parsed: %s", l)
		}
	}
}

func TestSyslogNG(t *testing.T) {
	sng := needTool(t, "syslog-ng", "syslog-ng-core")
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 1000, 1)
	out := filepath.Join(dir, "out.json")
	r := startDaemon(t, testConfig(t, dir, out))
	_, tcpPort, _ := net.SplitHostPort(r.d.Addr("tcp").String())

	n := 5000
	if raceEnabled {
		n = 2000
	}
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, "seq=%d cust=%d src=81.2.69.160\n", i, i%1000+1)
	}
	sdir := t.TempDir()
	input := filepath.Join(sdir, "in.log")
	if err := os.WriteFile(input, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ver := "3.35"
	if b, err := exec.Command(sng, "--version").Output(); err == nil {
		if m := regexp.MustCompile(`Config version: (\d+\.\d+)`).FindSubmatch(b); m != nil {
			ver = string(m[1])
		}
	}
	conf := fmt.Sprintf(`@version: %s
options { stats_freq(0); keep-hostname(yes); };
source s_in { file(%q follow-freq(0.1) flags(no-parse) program-override("webapp")); };
destination d_enrichd { network("127.0.0.1" port(%s) transport("tcp")); };
log { source(s_in); destination(d_enrichd); };
`, ver, input, tcpPort)
	cf := filepath.Join(sdir, "syslog-ng.conf")
	must(t, os.WriteFile(cf, []byte(conf), 0o644))
	cmd := exec.Command(sng, "-F", "-f", cf, "--persist-file", filepath.Join(sdir, "persist"),
		"--pidfile", filepath.Join(sdir, "pid"), "--control", filepath.Join(sdir, "ctl"), "--no-caps")
	var serr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &serr, &serr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Errorf("stopping syslog-ng: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("syslog-ng: %v", err)
		}
		if t.Failed() {
			t.Logf("syslog-ng output:\n%s", serr.String())
		}
	}()
	waitLines(t, out, n, 60*time.Second)
	time.Sleep(200 * time.Millisecond)
	lines := readLines(t, out)
	checkExactlyOnce(t, lines, n, 1000)
	if m := decode(t, lines[0]); get(m, "log.syslog.appname") != "webapp" {
		t.Errorf("syslog-ng header not parsed: %s", lines[0])
	}
}
