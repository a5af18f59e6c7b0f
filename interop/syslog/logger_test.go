package syslog

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// loggerGroup is one logger invocation: the header fields it is told to
// send with every line of its standard input.
type loggerGroup struct {
	tag, id, msgid, prio string
	fac, sev             int
}

var loggerGroups = []loggerGroup{
	{tag: "billing-api", id: "42", msgid: "login", prio: "local4.warning", fac: 20, sev: 4},
	{tag: "postfix/smtpd", prio: "mail.info", fac: 2, sev: 6},
	{tag: "sshd", id: "31337", prio: "auth.notice", fac: 4, sev: 5},
	{tag: "com.example.billing.reconciliation-worker", id: "7", msgid: "txn.commit", prio: "user.err", fac: 1, sev: 3},
}

// The header logger writes (its --stderr copy of each message), from which
// the test takes what logger itself chose: the host name and the time.
// With --octet-count the copy starts with the frame length.
var (
	logger3164 = regexp.MustCompile(`^(?:\d+ )?<\d+>([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) (\S+) `)
	logger5424 = regexp.MustCompile(`^(?:\d+ )?<\d+>1 (\S+) (\S+) `)
)

// TestLogger: util-linux logger sends thousands of events over UDP, TCP
// and TCP with octet counting, in RFC 3164 and RFC 5424, with the tags,
// PIDs, MSGIDs and priorities it is given and the messages on its
// standard input (UTF-8, quotes, '=' in values, leading spaces, tabs,
// 8 KB lines). Every event must reach enrichd once with those fields and
// with the host name and time logger put in the header (its --stderr copy
// of each message shows them). Lines are fed in chunks, each chunk only
// once enrichd has written the one before, so that UDP loses nothing to a
// full socket buffer on a loaded machine.
func TestLogger(t *testing.T) {
	bin := program(t, "logger", "bsdutils")
	const perGroup = 500
	for _, v := range []struct {
		name  string
		args  []string
		input string // enrichd's input flag
	}{
		{"udp-rfc3164", []string{"--udp", "--rfc3164"}, "--udp"},
		{"udp-rfc5424", []string{"--udp", "--rfc5424"}, "--udp"},
		{"tcp-rfc3164", []string{"--tcp", "--rfc3164"}, "--tcp"},
		{"tcp-rfc5424", []string{"--tcp", "--rfc5424"}, "--tcp"},
		{"tcp-octet-rfc3164", []string{"--tcp", "--octet-count", "--rfc3164"}, "--tcp"},
		{"tcp-octet-rfc5424", []string{"--tcp", "--octet-count", "--rfc5424"}, "--tcp"},
	} {
		t.Run(v.name, func(t *testing.T) {
			port := freePort(t)
			d := startEnrichd(t, "enrichd", v.input, "127.0.0.1:"+port)
			rfc3164 := strings.HasSuffix(v.name, "3164")
			w := wire{name: "logger " + v.name, precision: time.Millisecond}
			if rfc3164 {
				w.precision, w.noMsgID = time.Second, true
			}
			sent := map[string]parsed{}
			total := 0
			for gi, g := range loggerGroups {
				lines := make([]string, perGroup)
				for i := range lines {
					seq := fmt.Sprintf("%06d", gi*perGroup+i)
					body := genBodies[i%len(genBodies)]
					switch {
					case i%25 == 0:
						body = bigBody(8000)
					case i%7 == 0:
						body = "  leading spaces " + body
					}
					lines[i] = "seq=" + seq + " " + body
				}
				args := append([]string{bin, "--server", "127.0.0.1", "--port", port, "--size", "9000", "--stderr", "-t", g.tag, "-p", g.prio}, v.args...)
				if g.id != "" {
					args = append(args, "--id="+g.id)
				}
				if g.msgid != "" {
					args = append(args, "--msgid", g.msgid)
				}
				headers := runLogger(t, args, lines, d.out, &total)
				if len(headers) != len(lines) {
					t.Fatalf("logger wrote %d messages to stderr for %d lines", len(headers), len(lines))
				}
				for i, line := range lines {
					p := parsed{app: g.tag, procid: g.id, msgid: g.msgid, msg: line, fac: g.fac, sev: g.sev}
					if rfc3164 {
						m := logger3164.FindStringSubmatch(headers[i])
						if m == nil {
							t.Fatalf("logger's RFC 3164 header: %q", headers[i])
						}
						ts, err := time.Parse(time.Stamp, m[1])
						if err != nil {
							t.Fatal(err)
						}
						now := time.Now().UTC()
						p.time = time.Date(now.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), 0, time.UTC)
						p.host = m[2]
					} else {
						m := logger5424.FindStringSubmatch(headers[i])
						if m == nil {
							t.Fatalf("logger's RFC 5424 header: %q", headers[i])
						}
						ts, err := time.Parse(time.RFC3339Nano, m[1])
						if err != nil {
							t.Fatal(err)
						}
						p.time, p.host = ts, m[2]
					}
					sent[p.seq()] = p
				}
			}
			waitLines(t, total, 30*time.Second, d.out)
			d.stop(t)
			compareForwarded(t, w, sent, readEnrichd(t, d.out))
		})
	}
}

// runLogger runs logger with args, writes lines to its standard input in
// chunks, and returns the messages it copied to standard error. Before
// each chunk it waits until out holds every line sent so far (*total).
func runLogger(t *testing.T, args, lines []string, out string, total *int) []string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), tz)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var headers []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			headers = append(headers, sc.Text())
		}
		// Drained if a line over 1 MiB stopped the scanner; a read
		// error ends the output all the same.
		_, _ = io.Copy(io.Discard, stderr)
	}()
	const chunk = 100
	for i := 0; i < len(lines); i += chunk {
		waitLines(t, *total, 20*time.Second, out)
		end := min(i+chunk, len(lines))
		if _, err := io.WriteString(stdin, strings.Join(lines[i:end], "\n")+"\n"); err != nil {
			t.Fatalf("writing to logger: %v", err)
		}
		*total += end - i
	}
	stdin.Close()
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("logger: %v\n%s", err, strings.Join(headers, "\n"))
	}
	return headers
}
