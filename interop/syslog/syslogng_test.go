package syslog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// syslogngOptions are the global options of every syslog-ng the tests
// run: keep the host and timestamp of each message as received, no DNS,
// microseconds in timestamps, 64 KiB messages.
const syslogngOptions = `options { keep-hostname(yes); chain-hostnames(no); use-dns(no); use-fqdn(no); dns-cache(no);
  keep-timestamp(yes); frac-digits(6); log-msg-size(65536); log-fifo-size(100000); stats-freq(0); };
`

// syslogngParseTemplate writes syslog-ng's own parse of an event as JSON
// (format-json leaves empty values out; RAWMSG is kept by a source with
// flags(store-raw-message)).
const syslogngParseTemplate = `template("$(format-json --scope none host=${HOST} app=${PROGRAM} procid=${PID} msgid=${MSGID} time=${S_ISODATE} facility=${FACILITY_NUM} severity=${LEVEL_NUM} msg=${MESSAGE} tag=${LEGACY_MSGHDR} raw=${RAWMSG})\n")`

// startSyslogNG runs syslog-ng in the foreground with the configuration
// conf (its state files in dir) and waits until it accepts TCP
// connections on listen.
func startSyslogNG(t testing.TB, dir, conf, listen string) *proc {
	t.Helper()
	bin := program(t, "syslog-ng", "syslog-ng-core")
	path := filepath.Join(dir, "syslog-ng.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "syslog-ng", []string{bin, "-F", "-e", "--no-caps", "-f", path,
		"-p", filepath.Join(dir, "syslog-ng.pid"), "-R", filepath.Join(dir, "syslog-ng.persist"),
		"-c", filepath.Join(dir, "syslog-ng.ctl")}, nil)
	waitTCP(t, p, listen)
	return p
}

// TestSyslogNGForward: syslog-ng receives a mix of RFC 5424 and RFC 3164
// events on a syslog() source (RFC 5424, falling back to RFC 3164 for the
// others), writes its own parse of each, and forwards each through a
// syslog() destination (RFC 5424, octet-counted TCP) and a network()
// destination (RFC 3164, TCP, newline framed), each to its own enrichd.
// Every event must reach every enrichd once, with the fields syslog-ng
// parsed. With flow control nothing is dropped when a destination is slow.
func TestSyslogNGForward(t *testing.T) {
	program(t, "syslog-ng", "syslog-ng-core") // before anything starts, when it is missing
	const n = 4000
	dir := t.TempDir()
	formats := []struct {
		dest string
		w    wire
	}{
		{"syslog", wire{name: "syslog-ng syslog() (RFC 5424, octet-counted)", precision: time.Millisecond}},
		// network() writes the BSD date with the fraction frac-digits
		// asks for, in the event's own wall clock; syslog-ng's MESSAGE
		// already excludes the space after the TAG.
		{"network", wire{name: "syslog-ng network() (RFC 3164)", zoneless: true, precision: time.Millisecond, noMsgID: true}},
	}
	listen := "127.0.0.1:" + freePort(t)
	parseFile := filepath.Join(dir, "parse.json")
	conf := "@version: 3.38\n" + syslogngOptions +
		fmt.Sprintf("source s_in { syslog(ip(127.0.0.1) port(%s) transport(tcp) log-iw-size(10000)); };\n", listen[len("127.0.0.1:"):]) +
		fmt.Sprintf("destination d_parse { file(%q %s); };\n", parseFile, syslogngParseTemplate)
	logPath := "log { source(s_in); destination(d_parse);"
	var ds []*enrichd
	for i, f := range formats {
		port := freePort(t)
		ds = append(ds, startEnrichd(t, fmt.Sprintf("enrichd-%d", i), "--tcp", "127.0.0.1:"+port))
		conf += fmt.Sprintf("destination d_%d { %s(\"127.0.0.1\" port(%s) transport(tcp)); };\n", i, f.dest, port)
		logPath += fmt.Sprintf(" destination(d_%d);", i)
	}
	conf += logPath + " flags(flow-control); };\n"
	ng := startSyslogNG(t, dir, conf, listen)

	evs := genEvents(n, 2, time.Now())
	sendOctetCounted(t, listen, evs)
	paths := []string{parseFile}
	for _, d := range ds {
		paths = append(paths, d.out)
	}
	waitLines(t, n, 60*time.Second, paths...)
	ng.stop(t)
	for _, d := range ds {
		d.stop(t)
	}

	sent := readSender(t, parseFile, "")
	checkSenderParsedAll(t, "syslog-ng", evs, sent)
	for i, f := range formats {
		compareForwarded(t, f.w, sent, readEnrichd(t, ds[i].out))
	}
}
