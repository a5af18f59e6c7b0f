package enrichd

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// udpSocketDrops reads the "drops" column of /proc/net/udp for the socket
// bound to addr, and the socket's inode, which must be one of this
// process's descriptors.
func udpSocketDrops(t *testing.T, addr *net.UDPAddr) (drops uint64, inode string) {
	t.Helper()
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", addr.Port)
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 13 || fs[1] != local {
			continue
		}
		drops, err = strconv.ParseUint(fs[12], 10, 64)
		if err != nil {
			t.Fatalf("/proc/net/udp: drops %q: %v", fs[12], err)
		}
		inode = fs[9]
		fds, _ := filepath.Glob("/proc/self/fd/*")
		for _, fd := range fds {
			if l, _ := os.Readlink(fd); l == "socket:["+inode+"]" {
				return drops, inode
			}
		}
		t.Fatalf("/proc/net/udp: socket %s (inode %s) is not the daemon's", local, inode)
	}
	t.Fatalf("/proc/net/udp: no socket bound to %s", local)
	return 0, ""
}

// TestUDPKernelDrops overloads a udp input with a small read_buffer:
// 200,000 numbered datagrams sent as fast as the loop goes. The kernel's
// count of the socket's drops (/proc/net/udp) is what
// enrichd_events_dropped_total{reason="kernel"} says, and every datagram
// sent is either in the output file once or counted as dropped.
func TestUDPKernelDrops(t *testing.T) {
	const sent = 200_000
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 100, 1)
	out := filepath.Join(dir, "out.json")
	yml := fmt.Sprintf(`
inputs:
  - {name: udp, type: udp, listen: "127.0.0.1:0", read_buffer: 16KiB}
tables: {path: %q}
rules:
  - {name: customer, table: customers, field: cust, target: customer, columns: ["Customer Id"]}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
`, dir, out)
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	addr := r.d.Addr("udp").(*net.UDPAddr)

	c, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	var msg []byte
	for i := range sent {
		msg = append(msg[:0], "<13>1 - h app - - - cust=7 seq="...)
		msg = strconv.AppendInt(msg, int64(i), 10)
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	t.Logf("sent %d datagrams in %v", sent, time.Since(start))

	// Everything sent is accepted or dropped once the input has read what
	// the socket holds.
	const (
		in    = `enrichd_events_in_total{input="udp",type="udp"}`
		queue = `enrichd_events_dropped_total{input="udp",reason="queue_full",type="udp"}`
		kern  = `enrichd_events_dropped_total{input="udp",reason="kernel",type="udp"}`
	)
	var accepted, queueFull, kernel float64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		accepted, queueFull, kernel = metric(t, r.d, in), metric(t, r.d, queue), metric(t, r.d, kern)
		if accepted+queueFull+kernel >= sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("accepted %v + dropped %v (queue full) + %v (kernel) = %v of %d sent", accepted, queueFull, kernel,
				accepted+queueFull+kernel, sent)
		}
	}
	procDrops, inode := udpSocketDrops(t, addr)
	lines := waitLines(t, out, int(accepted), 60*time.Second)
	t.Logf("received %d, dropped %v (kernel; /proc/net/udp socket %s: %d) + %v (queue full)", len(lines), kernel, inode, procDrops, queueFull)

	if kernel == 0 {
		t.Fatalf("the kernel dropped nothing: the test did not overload the input")
	}
	if d := kernel - float64(procDrops); d > 0.01*float64(procDrops) || d < -0.01*float64(procDrops) {
		t.Errorf("enrichd_events_dropped_total{reason=kernel} = %v, the kernel counted %d for the socket", kernel, procDrops)
	}
	seen := make(map[int]bool, len(lines))
	re := regexp.MustCompile(`seq=(\d+)`)
	for _, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("output line without seq: %s", l)
		}
		n, _ := strconv.Atoi(m[1])
		if seen[n] {
			t.Fatalf("seq=%d twice", n)
		}
		seen[n] = true
	}
	if got := float64(len(lines)) + kernel + queueFull; len(lines) != int(accepted) || got != sent {
		t.Errorf("sent %d, received %d (accepted %v) + dropped %v (kernel) + %v (queue full) = %v", sent, len(lines), accepted,
			kernel, queueFull, got)
	}
}

// TestUDPReadBuffer asks for a read_buffer twice net.core.rmem_max, in a
// child process (this test binary again). With CAP_NET_ADMIN (root) the
// socket gets it (SO_RCVBUFFORCE) and nothing is logged; without it
// (setpriv drops the capability, or the test does not run as root) the
// kernel caps it at rmem_max and the warning gives both sizes.
func TestUDPReadBuffer(t *testing.T) {
	if v := os.Getenv("ENRICHD_TEST_UDP_READ_BUFFER"); v != "" {
		udpReadBufferChild(t, v)
		return
	}
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Fatal(err)
	}
	rmem, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	asked := 2 * rmem
	run := func(prefix ...string) string {
		t.Helper()
		args := append(prefix, os.Args[0], "-test.run=^TestUDPReadBuffer$", "-test.count=1")
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "ENRICHD_TEST_UDP_READ_BUFFER="+strconv.Itoa(asked))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		t.Logf("%v:\n%s", args[:len(args)-3], out)
		return string(out)
	}
	warning := fmt.Sprintf(`"msg":"udp: the kernel capped read_buffer (net.core.rmem_max): raise that sysctl, or give enrichd CAP_NET_ADMIN (SO_RCVBUFFORCE)","input":"udp","listen":"127.0.0.1:0","read_buffer":%d,"obtained":%d}`, asked, rmem)
	unprivileged := []string(nil)
	if os.Geteuid() == 0 {
		out := run()
		if !strings.Contains(out, fmt.Sprintf("obtained %d\n", asked)) || strings.Contains(out, "capped") {
			t.Errorf("as root, read_buffer %d (rmem_max %d):\n%s", asked, rmem, out)
		}
		p, err := exec.LookPath("setpriv")
		if err != nil {
			testfiles.Missing(t, "setpriv (Debian package util-linux)")
		}
		unprivileged = []string{p, "--inh-caps=-net_admin", "--bounding-set=-net_admin", "--"}
	}
	out := run(unprivileged...)
	if !strings.Contains(out, fmt.Sprintf("obtained %d\n", rmem)) || !strings.Contains(out, warning) {
		t.Errorf("without CAP_NET_ADMIN, read_buffer %d (rmem_max %d): want the warning\n%s\ngot:\n%s", asked, rmem, warning, out)
	}
}

// udpReadBufferChild opens a udp input with read_buffer asked, logging
// to stdout, and prints the receive buffer the kernel reports.
func udpReadBufferChild(t *testing.T, asked string) {
	size, err := strconv.Atoi(asked)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Log: slog.New(slog.NewJSONHandler(os.Stdout, nil)), name: "udp", typ: "udp"}
	ic := &InputConfig{Name: "udp", Type: "udp", Listen: "127.0.0.1:0", Settings: &UDPInputConfig{ReadBuffer: size}}
	in, err := newUDPInput(ic, env)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	rc, err := in.(*udpInput).conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	_ = rc.Control(func(fd uintptr) { got, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("obtained %d\n", got/2)
}

// TestUDPTruncation: a udp input tags and counts as truncated only the
// datagrams whose message, without the line end or NUL a sender puts
// after it (Python's SysLogHandler adds a NUL), is longer than
// max_message_size. A message of exactly max_message_size with "\n"
// after it used to be tagged _truncated though it was whole.
func TestUDPTruncation(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(fmt.Sprintf(`
inputs:
  - {name: udp, type: udp, listen: "127.0.0.1:0", max_message_size: 100}
tables: {path: %q}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
`, dir, out)))
	if err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	// msg is a message of n bytes, "id" the first word of its text.
	msg := func(id string, n int) string {
		m := "<13>app: " + id + " "
		return m + strings.Repeat("x", n-len(m))
	}
	cases := []struct {
		id, datagram string
		trunc        bool
	}{
		{"lf", msg("lf", 100) + "\n", false},
		{"crlf", msg("crlf", 100) + "\r\n", false},
		{"nul", msg("nul", 100) + "\x00", false},
		{"bare", msg("bare", 100), false},
		{"long", msg("long", 101), true},
		{"long-lf", msg("long-lf", 101) + "\n", true},
		{"longer", msg("longer", 60000), true},
	}
	c, err := net.Dial("udp", r.d.Addr("udp").String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range cases {
		if _, err := c.Write([]byte(tc.datagram)); err != nil {
			t.Fatal(err)
		}
	}
	lines := waitLines(t, out, len(cases), 30*time.Second)
	got := map[string]string{}
	for _, l := range lines {
		m := fmt.Sprint(get(decode(t, l), "message"))
		id, _, _ := strings.Cut(m, " ")
		got[id] = l
	}
	wantTrunc := 0
	for _, tc := range cases {
		l, ok := got[tc.id]
		if !ok {
			t.Errorf("%s: not written", tc.id)
			continue
		}
		if tc.trunc {
			wantTrunc++
		}
		if tagged := strings.Contains(l, `"_truncated"`); tagged != tc.trunc {
			t.Errorf("%s: tagged _truncated %v, want %v: %s", tc.id, tagged, tc.trunc, l)
		}
		if m := fmt.Sprint(get(decode(t, l), "message")); !tc.trunc && len(m) != 100-len("<13>app: ") {
			t.Errorf("%s: message of %d bytes: %q", tc.id, len(m), m)
		}
	}
	needMetric(t, r.d, `enrichd_events_truncated_total{input="udp",type="udp"}`, float64(wantTrunc), "truncated")
	if v := metric(t, r.d, `enrichd_events_truncated_total{input="udp",type="udp"}`); v != float64(wantTrunc) {
		t.Errorf("enrichd_events_truncated_total %v, want %d", v, wantTrunc)
	}
}
