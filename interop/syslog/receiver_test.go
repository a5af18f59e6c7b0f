package syslog

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// rxCase is one message of the receiver test. follow names, for each
// field on which rsyslog and syslog-ng disagree, the program whose parse
// enrichd gives; docs/enrichd.md says why. A disagreement the case does
// not settle fails the test, and so does a follow entry where the two
// agree, so the table stays true to the programs.
type rxCase struct {
	line   string
	follow map[string]string
	// noTime: no timestamp, so each program uses its time of receipt.
	noTime bool
}

const (
	rs = "rsyslog"
	ng = "syslog-ng"
)

// rxCases are RFC 3164 variants (TAGs with and without ':' and [pid], cut
// by the 32-byte limit, followed directly by the message; hosts that are
// and are not host names; timestamps with and without day padding, year,
// fraction) and the forms the forwarding templates produce, with a few
// RFC 5424 messages.
var rxCases = []rxCase{
	// The TAG forms.
	{line: "<165>Dec  1 14:20:02 db-2 billing-api id=2 cust=18"},
	{line: "<165>Dec  1 14:20:02 db-2 billing-api[42] id=3"},
	{line: "<165>Dec  1 14:20:02 db-2 billing-api: id=4"},
	{line: "<165>Dec  1 14:20:02 db-2 billing-api[42]: id=5"},
	{line: "<13>Jan 15 01:02:03 host free text"},
	{line: "<13>Jan 15 01:02:03 host see http://x"},
	{line: "<13>Jan 15 01:02:03 host http://x"},
	{line: "<13>Jan 15 01:02:03 tag[1]: no host"},
	{line: "<13>Jan 15 01:02:03 tag: no host"},
	{line: "<13>Jan 15 01:02:03 host app[12]: "},
	{line: "<13>Jan 15 01:02:03 host app"},
	{line: "<13>Jan 15 01:02:03 host app:  two spaces after"},
	{line: "<13>Jan 15 01:02:03 host : empty tag"},
	{line: "<13>Jan 15 01:02:03 host app[]: empty pid"},
	// rsyslog ends the programname at '/' and at bytes that are not
	// printable ASCII (unless parser.permitSlashInProgramname is on);
	// syslog-ng keeps the whole name, as does enrichd.
	{line: "<13>Jan 15 01:02:03 host postfix/smtpd[123]: x", follow: map[string]string{"app": ng}},
	{line: "<13>Jan 15 01:02:03 host appé: utf-8 tag", follow: map[string]string{"app": ng}},
	// A PROCID without its ']' (what a 32-byte cut leaves) is no PROCID
	// for rsyslog; syslog-ng takes the digits.
	{line: "<13>Jan 15 01:02:03 host app[12 msg", follow: map[string]string{"procid": rs}},
	// After "[pid]" the TAG runs on to ':' or SP for rsyslog; syslog-ng
	// makes the rest part of the message.
	{line: "<13>Jan 15 01:02:03 host app[12]x: msg", follow: map[string]string{"message": rs}},
	// TAGs longer than 32 bytes, whole and as rsyslog's forwarding
	// formats cut them.
	{line: "<13>Jan 15 01:02:03 host abcdefghijabcdefghijabcdefghijab[1234]: long tag"},
	{line: "<13>Jan 15 01:02:03 host abcdefghijabcdefghijabcdefghijab long tag cut before its pid"},
	{line: "<13>Jan 15 01:02:03 host abcdefghijabcdefghijabcdefghij[1 cut tag", follow: map[string]string{"procid": rs}},
	// The HOST: syslog-ng takes any word followed by SP that has no '['
	// and no ':' (but for an IPv6 address); rsyslog only letters, digits,
	// '.', '_' and '-', ending in a letter or digit. enrichd takes
	// syslog-ng's, but a word ending in ':' is a TAG, as for rsyslog.
	{line: "<13>Jan 15 01:02:03 host- app: msg", follow: map[string]string{"host": ng, "app": ng, "message": ng}},
	{line: "<13>Jan 15 01:02:03 host.example.com. app: msg", follow: map[string]string{"host": ng, "app": ng, "message": ng}},
	{line: "<13>Jan 15 01:02:03 fe80::1 app: msg", follow: map[string]string{"host": ng, "app": ng, "message": ng}},
	{line: "<13>Jan 15 01:02:03 host@x app: msg", follow: map[string]string{"host": ng, "app": ng, "message": ng}},
	{line: "<13>Jan 15 01:02:03 cafe: msg", follow: map[string]string{"host": rs, "app": rs, "message": rs}},
	{line: "<13>Jan 15 01:02:03 host  app: two spaces", follow: map[string]string{"app": ng, "message": ng}},
	// A lone word after the timestamp is the HOST for rsyslog, the TAG
	// for syslog-ng.
	{line: "<13>Jan 15 01:02:03 host", follow: map[string]string{"host": rs, "app": rs}},
	// Without a timestamp there is no HOST (RFC 3164 4.3.3): the first
	// word is the TAG, as for syslog-ng; rsyslog still looks for a HOST.
	{line: "<13>just text", noTime: true, follow: map[string]string{"host": ng, "app": ng, "message": ng}},
	{line: "<13>myapp: no timestamp", noTime: true},
	{line: "<13>myhost myapp: no timestamp", noTime: true, follow: map[string]string{"host": ng, "app": ng, "message": ng}},
	// A body that starts with '{' or '[' has no header (rsyslog); syslog-ng
	// makes `{"a"` the TAG.
	{line: `<13>{"a":1}`, noTime: true, follow: map[string]string{"app": rs, "message": rs}},
	{line: `<13>Jan 15 01:02:03 host {"a":1}`},
	// Timestamps.
	{line: "<13>2026-11-30T05:24:00.123456+01:00 web-1 sshd[77]: Accepted"},
	{line: "<13>Jan 15 01:02:03.123 host app: frac"},
	{line: "<13>Jan  5 01:02:03 host app: day pad"},
	{line: "<13>Jun 5 01:02:03 host app: day unpadded", follow: map[string]string{"timestamp": rs, "host": rs, "app": rs, "message": rs}},
	{line: "<13> Jan 15 01:02:03 host app: leading space"},
	{line: "<13>Jan 15 2026 01:02:03 host app: year"},
	{line: "<13>Mar  1 01:02:03: %SYS-5-CONFIG_I: colon after the time"},
	{line: "<13>Mar  1 01:02:03: host app: colon after the time, then a host"},
	// What the forwarding formats send: rsyslog's traditional and
	// RFC 3339 headers for an RFC 5424 event with PROCID "-" (the TAG is
	// the bare APP-NAME) and for an empty message, syslog-ng's network()
	// with frac-digits.
	{line: "<13>Nov 30 05:24:00 web-1 sshd 5424 no pid"},
	{line: "<13>2026-11-30T05:24:00.123456+01:00 web-1 sshd 5424 no pid, RFC 3339"},
	{line: "<13>Dec  1 16:23:38 web-1 tg[4] "},
	{line: "<13>Jan 15 01:02:03.000000 host app[42]: syslog-ng network()"},
	// RFC 5424. rsyslog keeps the BOM in the message; syslog-ng and
	// enrichd remove it (it marks the encoding, RFC 5424 6.4).
	{line: "<13>1 2026-11-30T05:24:00.123456+01:00 web-1 sshd - - - 5424 no pid"},
	{line: "<13>1 2026-11-30T05:24:00Z - - - - - all nil"},
	{line: "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 8710 ID47 [exampleSDID@32473 iut=\"3\"] \xEF\xBB\xBFAn application event", follow: map[string]string{"message": ng}},
}

// TestReceiverParse sends the same bytes to rsyslog, syslog-ng and enrichd
// as receivers (one octet-counted TCP connection each) and compares their
// parses field by field: where rsyslog and syslog-ng agree enrichd must
// agree with them; where they disagree, with the one rxCases names.
//
// Before comparing, each program's way of saying "absent" is read as
// absent: rsyslog writes "-" and fills a missing HOST with the peer's name
// (localhost), syslog-ng with its address (127.0.0.1), where enrichd
// leaves host.name out. rsyslog's MSG of an RFC 3164 message keeps the
// space after the TAG, which syslog-ng and enrichd drop: one leading space
// of rsyslog's MSG is removed. rsyslog's programname is the app name. The
// year of an RFC 3164 timestamp is inferred as syslog-ng does.
func TestReceiverParse(t *testing.T) {
	rsyslogd(t) // before anything starts, when a program is missing
	program(t, "syslog-ng", "syslog-ng-core")
	dir := t.TempDir()
	seen := map[string]bool{}
	var evs []input
	for _, c := range rxCases {
		if seen[c.line] {
			t.Fatalf("line %q twice in rxCases", c.line)
		}
		seen[c.line] = true
		evs = append(evs, input{wire: []byte(c.line)})
	}

	rsListen := "127.0.0.1:" + freePort(t)
	rsFile := filepath.Join(dir, "rsyslog.json")
	rsConf := fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port=%q ruleset="parse")
%s
ruleset(name="parse") { action(type="omfile" file=%q template="parse") }
`, dir, rsListen[len("127.0.0.1:"):], rsyslogParseTemplate, rsFile)
	rsDir := filepath.Join(dir, "rsyslog")
	ngDir := filepath.Join(dir, "syslog-ng")
	mkdirs(t, rsDir, ngDir)
	rsp := startRsyslog(t, rsDir, rsConf, rsListen)

	ngListen := "127.0.0.1:" + freePort(t)
	ngFile := filepath.Join(dir, "syslog-ng.json")
	ngConf := "@version: 3.38\n" + syslogngOptions +
		fmt.Sprintf("source s_in { syslog(ip(127.0.0.1) port(%s) transport(tcp) flags(store-raw-message)); };\n", ngListen[len("127.0.0.1:"):]) +
		fmt.Sprintf("destination d_parse { file(%q %s); };\nlog { source(s_in); destination(d_parse); };\n", ngFile, syslogngParseTemplate)
	ngp := startSyslogNG(t, ngDir, ngConf, ngListen)

	edPort := freePort(t)
	ed := startEnrichd(t, "enrichd", "--tcp", "127.0.0.1:"+edPort)

	sendOctetCounted(t, rsListen, evs)
	sendOctetCounted(t, ngListen, evs)
	sendOctetCounted(t, "127.0.0.1:"+edPort, evs)
	waitLines(t, len(evs), 30*time.Second, rsFile, ngFile, ed.out)
	rsp.stop(t)
	ngp.stop(t)
	ed.stop(t)

	byRaw := func(name string, ps []parsed) map[string]parsed {
		m := map[string]parsed{}
		for _, p := range ps {
			if !seen[p.raw] || m[p.raw].raw != "" {
				t.Fatalf("%s: unexpected or repeated message %q", name, p.raw)
			}
			m[p.raw] = p
		}
		if len(m) != len(evs) {
			t.Fatalf("%s parsed %d of %d messages", name, len(m), len(evs))
		}
		return m
	}
	rsP := byRaw(rs, readParses(t, rsFile, "-"))
	ngP := byRaw(ng, readParses(t, ngFile, ""))
	edP := byRaw("enrichd", readEnrichd(t, ed.out))

	var disagreements []string
	yearRule := 0
	for _, c := range rxCases {
		r, g, e := rsP[c.line], ngP[c.line], edP[c.line]
		if r.host == "localhost" && !strings.Contains(c.line, "localhost") {
			r.host = ""
		}
		if g.host == "127.0.0.1" && !strings.Contains(c.line, "127.0.0.1") {
			g.host = ""
		}
		if r.version == "0" {
			r.msg = strings.TrimPrefix(r.msg, " ")
		}
		ms := func(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano) }
		fields := []struct{ name, rs, ng, ed string }{
			{"host", r.host, g.host, e.host},
			{"app", r.app, g.app, e.app},
			{"procid", r.procid, g.procid, e.procid},
			{"msgid", r.msgid, g.msgid, e.msgid},
			{"message", r.msg, g.msg, e.msg},
			{"facility", fmt.Sprint(r.fac), fmt.Sprint(g.fac), fmt.Sprint(e.fac)},
			{"severity", fmt.Sprint(r.sev), fmt.Sprint(g.sev), fmt.Sprint(e.sev)},
		}
		if c.noTime {
			for _, other := range []time.Time{r.time, g.time} {
				if d := e.time.Sub(other); d < -time.Minute || d > time.Minute {
					t.Errorf("%q: no timestamp: enrichd's time %s is not the time of receipt (%s)", c.line, e.time, other)
				}
			}
		} else {
			fields = append(fields, struct{ name, rs, ng, ed string }{"timestamp", ms(r.time), ms(g.time), ms(e.time)})
		}
		for _, f := range fields {
			want := f.rs
			who := c.follow[f.name]
			switch {
			case f.rs == f.ng && who != "":
				t.Errorf("%q: rxCases says enrichd follows %s on %s, but rsyslog and syslog-ng agree (%q)", c.line, who, f.name, f.rs)
			case f.rs != f.ng:
				if who == "" && f.name == "timestamp" {
					who = ng // the year of an RFC 3164 timestamp
				}
				switch who {
				case rs:
				case ng:
					want = f.ng
				default:
					t.Errorf("%q: rsyslog (%q) and syslog-ng (%q) disagree on %s: rxCases must say which enrichd follows", c.line, f.rs, f.ng, f.name)
					continue
				}
				if c.follow[f.name] == "" {
					yearRule++ // the timestamp default: shown once below
				} else {
					disagreements = append(disagreements, fmt.Sprintf("%-9s rsyslog %-22q syslog-ng %-22q enrichd follows %-9s  %q", f.name, f.rs, f.ng, who, c.line))
				}
			}
			if f.ed != want {
				t.Errorf("%q: %s: enrichd %q, want %q (rsyslog %q, syslog-ng %q)", c.line, f.name, f.ed, want, f.rs, f.ng)
			}
		}
	}
	sort.Strings(disagreements)
	if yearRule > 0 {
		disagreements = append(disagreements, fmt.Sprintf("timestamp: the year of %d RFC 3164 timestamps, which rsyslog takes from the clock and syslog-ng (and enrichd) moves a year on for a January timestamp in December or back for a December one in January", yearRule))
	}
	t.Logf("%d messages; where rsyslog and syslog-ng disagree:\n%s", len(rxCases), strings.Join(disagreements, "\n"))
}
