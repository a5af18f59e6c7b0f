package syslog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// rsyslogd returns the rsyslogd binary and its module directory:
// $LUTKIT_RSYSLOGD, or the copy that `make deps` (.ci/rsyslog.sh) unpacks
// into .cache/rsyslog/root. The modules are found next to the binary, in
// ../lib/<multiarch triplet>/rsyslog.
func rsyslogd(t testing.TB) (bin, modules string) {
	t.Helper()
	bin = os.Getenv("LUTKIT_RSYSLOGD")
	if bin == "" {
		root, err := testfiles.Root()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".cache", "rsyslog", "root", "usr", "sbin", "rsyslogd")
	}
	if _, err := os.Stat(bin); err != nil {
		testfiles.Missing(t, bin+" (rsyslog, fetched by `make deps` through .ci/rsyslog.sh; or set $LUTKIT_RSYSLOGD)")
	}
	mods, _ := filepath.Glob(filepath.Join(filepath.Dir(bin), "..", "lib", "*", "rsyslog", "imtcp.so"))
	if len(mods) == 0 {
		testfiles.Missing(t, "rsyslog's modules (imtcp.so) in ../lib/*/rsyslog next to "+bin)
	}
	return bin, filepath.Dir(mods[0])
}

// startRsyslog runs rsyslogd in the foreground with the configuration
// conf (its work directory is dir) and waits until it accepts TCP
// connections on listen.
func startRsyslog(t testing.TB, dir, conf, listen string) *proc {
	t.Helper()
	bin, mods := rsyslogd(t)
	path := filepath.Join(dir, "rsyslog.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "rsyslogd", []string{bin, "-n", "-f", path, "-M", mods, "-i", filepath.Join(dir, "rsyslogd.pid")}, nil)
	waitTCP(t, p, listen)
	return p
}

// rsyslogParseTemplate writes rsyslog's own parse of an event as JSON:
// the properties its forwarding templates are built from (APP-NAME is the
// programname for an RFC 3164 event; the TAG of an RFC 5424 event is
// APP-NAME[PROCID], or APP-NAME when PROCID is "-").
const rsyslogParseTemplate = `template(name="parse" type="list" option.jsonf="on") {
  property(outname="host" name="hostname" format="jsonf")
  property(outname="app" name="app-name" format="jsonf")
  property(outname="tag" name="syslogtag" format="jsonf")
  property(outname="procid" name="procid" format="jsonf")
  property(outname="msgid" name="msgid" format="jsonf")
  property(outname="time" name="timereported" dateFormat="rfc3339" format="jsonf")
  property(outname="facility" name="syslogfacility" format="jsonf")
  property(outname="severity" name="syslogseverity" format="jsonf")
  property(outname="msg" name="msg" format="jsonf")
  property(outname="raw" name="rawmsg" format="jsonf")
  property(outname="version" name="protocol-version" format="jsonf")
}
`

// TestRsyslogForward: rsyslog receives a mix of RFC 5424 and RFC 3164
// events, writes its own parse of each, and forwards each with omfwd over
// TCP in its three forwarding formats, each to its own enrichd. Every
// event must reach every enrichd once, with the fields rsyslog parsed.
//
// rsyslog runs with parser.permitSlashInProgramname on: by default its
// programname (hence the APP-NAME it forwards in RFC 5424) ends at '/',
// while syslog-ng and enrichd keep "postfix/smtpd" whole (TestReceiverParse
// shows rsyslog's default beside them).
func TestRsyslogForward(t *testing.T) {
	rsyslogd(t) // before anything starts, when rsyslog is missing
	const n = 4000
	dir := t.TempDir()
	formats := []struct {
		template, framing string
		w                 wire
	}{
		{"RSYSLOG_SyslogProtocol23Format", "octet-counted", wire{name: "rsyslog RSYSLOG_SyslogProtocol23Format (octet-counted)", precision: time.Millisecond}},
		{"RSYSLOG_TraditionalForwardFormat", "traditional", wire{name: "rsyslog RSYSLOG_TraditionalForwardFormat", zoneless: true, precision: time.Second, noMsgID: true, tag32: true, sepSP: true}},
		{"RSYSLOG_ForwardFormat", "traditional", wire{name: "rsyslog RSYSLOG_ForwardFormat", precision: time.Millisecond, noMsgID: true, tag32: true, sepSP: true}},
	}
	listen := "127.0.0.1:" + freePort(t)
	parseFile := filepath.Join(dir, "parse.json")
	conf := fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k" parser.permitSlashInProgramname="on")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port=%q ruleset="fwd")
%s
ruleset(name="fwd") {
  action(type="omfile" file=%q template="parse")
`, dir, listen[len("127.0.0.1:"):], rsyslogParseTemplate, parseFile)
	var ds []*enrichd
	for i, f := range formats {
		port := freePort(t)
		ds = append(ds, startEnrichd(t, fmt.Sprintf("enrichd-%d", i), "--tcp", "127.0.0.1:"+port))
		conf += fmt.Sprintf("  action(type=\"omfwd\" target=\"127.0.0.1\" port=%q protocol=\"tcp\" TCP_Framing=%q template=%q action.resumeRetryCount=\"-1\")\n",
			port, f.framing, f.template)
	}
	conf += "}\n"
	rs := startRsyslog(t, dir, conf, listen)

	evs := genEvents(n, 1, time.Now())
	sendOctetCounted(t, listen, evs)
	paths := []string{parseFile}
	for _, d := range ds {
		paths = append(paths, d.out)
	}
	waitLines(t, n, 60*time.Second, paths...)
	rs.stop(t)
	for _, d := range ds {
		d.stop(t)
	}

	sent := readSender(t, parseFile, "-")
	checkSenderParsedAll(t, "rsyslog", evs, sent)
	for i, f := range formats {
		compareForwarded(t, f.w, sent, readEnrichd(t, ds[i].out))
	}
}
