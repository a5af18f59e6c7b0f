package parse

import (
	"testing"
)

// TestParse3164Rules checks each rule of parse3164 on the forms rsyslog
// and syslog-ng read the same way and on those where they differ (the
// comment says whose reading is followed). interop/syslog's
// TestReceiverParse sends these bytes to both programs.
func TestParse3164Rules(t *testing.T) {
	const ts = `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03"`
	for _, tc := range []struct{ in, want string }{
		// The TAG forms, with and without ':' and [pid]; a TAG followed
		// directly by the message (issue 12: rsyslog forwards an RFC 5424
		// event whose PROCID is "-" this way).
		{"<165>Dec  1 14:20:02 db-2 billing-api id=2 cust=18", `rfc3164 fac=20 sev=5 ts="Dec  1 14:20:02" host="db-2" app="billing-api" msg="id=2 cust=18"`},
		{"<165>Dec  1 14:20:02 db-2 billing-api[42] id=3", `rfc3164 fac=20 sev=5 ts="Dec  1 14:20:02" host="db-2" app="billing-api" pid="42" msg="id=3"`},
		{"<165>Dec  1 14:20:02 db-2 billing-api: id=4", `rfc3164 fac=20 sev=5 ts="Dec  1 14:20:02" host="db-2" app="billing-api" msg="id=4"`},
		{"<165>Dec  1 14:20:02 db-2 billing-api[42]: id=5", `rfc3164 fac=20 sev=5 ts="Dec  1 14:20:02" host="db-2" app="billing-api" pid="42" msg="id=5"`},
		{"<13>Jan 15 01:02:03 host app", ts + ` host="host" app="app"`},
		{"<13>Jan 15 01:02:03 host app ", ts + ` host="host" app="app"`},
		{"<13>Jan 15 01:02:03 host app[12]: ", ts + ` host="host" app="app" pid="12"`},
		{"<13>Jan 15 01:02:03 host app:  two spaces", ts + ` host="host" app="app" msg=" two spaces"`},
		{"<13>Jan 15 01:02:03 host app:no space", ts + ` host="host" app="app" msg="no space"`},
		{"<13>Jan 15 01:02:03 host : empty tag", ts + ` host="host" msg="empty tag"`},
		{"<13>Jan 15 01:02:03 host app[]: empty pid", ts + ` host="host" app="app" msg="empty pid"`},
		{"<13>Jan 15 01:02:03 host [9]: no app", ts + ` host="host" pid="9" msg="no app"`},
		{"<13>Jan 15 01:02:03 host postfix/smtpd[123]: x", ts + ` host="host" app="postfix/smtpd" pid="123" msg="x"`},
		{"<13>Jan 15 01:02:03 host appé: utf-8", ts + ` host="host" app="appé" msg="utf-8"`},
		{"<13>Jan 15 01:02:03 host worker-7[a:b]: x", ts + ` host="host" app="worker-7" msg="b]: x"`},
		{"<13>Jan 15 01:02:03 host app[12 msg", ts + ` host="host" app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 host app[12]x: msg", ts + ` host="host" app="app" pid="12" msg="msg"`},
		{"<13>Jan 15 01:02:03 host app[1][2]: x", ts + ` host="host" app="app" pid="1" msg="x"`},
		// TAGs longer than 32 bytes are read whole; cut ones as they are.
		{"<13>Jan 15 01:02:03 host abcdefghijabcdefghijabcdefghijab[1234]: long", ts + ` host="host" app="abcdefghijabcdefghijabcdefghijab" pid="1234" msg="long"`},
		{"<13>Jan 15 01:02:03 host abcdefghijabcdefghijabcdefghij[1 cut", ts + ` host="host" app="abcdefghijabcdefghijabcdefghij" msg="cut"`},
		// HOSTs.
		{"<13>Jan 15 01:02:03 tag[1]: no host", ts + ` app="tag" pid="1" msg="no host"`},
		{"<13>Jan 15 01:02:03 tag: no host", ts + ` app="tag" msg="no host"`},
		{"<13>Jan 15 01:02:03 cafe: msg", ts + ` app="cafe" msg="msg"`},
		{"<13>Jan 15 01:02:03 host- app: msg", ts + ` host="host-" app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 host.example.com. app: msg", ts + ` host="host.example.com." app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 fe80::1 app: msg", ts + ` host="fe80::1" app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 ::ffff:10.1.2.3 app: msg", ts + ` host="::ffff:10.1.2.3" app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 1:2:3:4:5:6:7:8:9 app: msg", ts + ` app="1" msg="2:3:4:5:6:7:8:9 app: msg"`},
		{"<13>Jan 15 01:02:03 abcde:1 app: msg", ts + ` app="abcde" msg="1 app: msg"`},
		{"<13>Jan 15 01:02:03 host@x app: msg", ts + ` host="host@x" app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 hôst app: msg", ts + ` host="hôst" app="app" msg="msg"`},
		{"<13>Jan 15 01:02:03 host  app: two spaces", ts + ` host="host" app="app" msg="two spaces"`},
		{"<13>Jan 15 01:02:03 host", ts + ` host="host"`},
		{"<13>Jan 15 01:02:03 host ", ts + ` host="host"`},
		{"<13>Jan 15 01:02:03 ", ts},
		// No timestamp: no HOST.
		{"<13>myhost myapp: no timestamp", `rfc3164 fac=1 sev=5 app="myhost" msg="myapp: no timestamp"`},
		{"<13>  app[3]: spaces first", `rfc3164 fac=1 sev=5 app="app" pid="3" msg="spaces first"`},
		// No header: a JSON or bracketed body.
		{`<13>{"a":1}`, `rfc3164 fac=1 sev=5 msg="{\"a\":1}"`},
		{"<13> \t[x] y", `rfc3164 fac=1 sev=5 msg=" \t[x] y"`},
		{`<13>Jan 15 01:02:03 host {"a":1}`, ts + ` host="host" app="{\"a\"" msg="1}"`},
		// Timestamps.
		{"<13>Jan  5 01:02:03 host app: x", `rfc3164 fac=1 sev=5 ts="Jan  5 01:02:03" host="host" app="app" msg="x"`},
		{"<13>Jan 5 01:02:03 host app: x", `rfc3164 fac=1 sev=5 ts="Jan 5 01:02:03" host="host" app="app" msg="x"`},
		{"<13>Jan 05 01:02:03 host app: x", `rfc3164 fac=1 sev=5 ts="Jan 05 01:02:03" host="host" app="app" msg="x"`},
		{"<13> Jan 15 01:02:03 host app: x", ts + ` host="host" app="app" msg="x"`},
		{"<13>Jan 15 2026 01:02:03 host app: x", `rfc3164 fac=1 sev=5 ts="Jan 15 2026 01:02:03" host="host" app="app" msg="x"`},
		{"<13>Jan 15 01:02:03.000000 host app[42]: x", `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03.000000" host="host" app="app" pid="42" msg="x"`},
		{"<13>Jan 15 01:02:03: %SYS-5-CONFIG_I: x", ts + ` app="%SYS-5-CONFIG_I" msg="x"`},
		{"<13>Jan 15 01:02:03x host app: x", `rfc3164 fac=1 sev=5 app="Jan" msg="15 01:02:03x host app: x"`},
		{"<13>Jan 15 01:02 host app: x", `rfc3164 fac=1 sev=5 app="Jan" msg="15 01:02 host app: x"`},
		{"<13>2026-11-30T05:24:00.123456+01:00 web-1 sshd 5424 no pid", `rfc3164 fac=1 sev=5 ts="2026-11-30T05:24:00.123456+01:00" host="web-1" app="sshd" msg="5424 no pid"`},
		// A BOM at the start of the message is dropped.
		{"<13>Jan 15 01:02:03 host app: \xEF\xBB\xBFbom", ts + ` host="host" app="app" msg="bom"`},
	} {
		var ev Event
		if err := ParseSyslog([]byte(tc.in), &ev); err != nil {
			t.Errorf("ParseSyslog(%q): %v", tc.in, err)
			continue
		}
		if got := evString(&ev); got != tc.want {
			t.Errorf("ParseSyslog(%q):\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestHostLen checks the HOST rule byte by byte: syslog-ng's (any word
// without '[' followed by SP, with ':' only as in an IPv6 address) but
// never a word ending in ':'.
func TestHostLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"web-1 x", 5}, {"web-1", 5}, {"", 0}, {" x", 0}, {"a[1] x", 0}, {"tag: x", 0}, {"tag:", 0},
		{"fe80::1 x", 7}, {"::1 x", 3}, {"1:2:3:4:5:6:7:8 x", 15}, {"1:2:3:4:5:6:7:8:9 x", 0},
		{"12345:1 x", 0}, {"g:1 x", 0}, {"ab:cd x", 5}, {"::ffff:1.2.3.4 x", 14}, {"a:b-c:d x", 0},
		{"host.example.com. x", 17}, {"host- x", 5}, {"h@x/y x", 5}, {"hôst x", 5},
	} {
		if got := hostLen([]byte(tc.in)); got != tc.want {
			t.Errorf("hostLen(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestScan3164 checks the RFC 3164 timestamp forms and their fields.
func TestScan3164(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want stamp3164
		n    int
	}{
		{"Jan 15 01:02:03", stamp3164{0, 1, 15, 1, 2, 3, 0}, 15},
		{"Feb  5 01:02:03 host", stamp3164{0, 2, 5, 1, 2, 3, 0}, 15},
		{"Mar 5 23:59:60", stamp3164{0, 3, 5, 23, 59, 60, 0}, 14},
		{"Dec 31 2025 23:59:59.5", stamp3164{2025, 12, 31, 23, 59, 59, 500000000}, 22},
		{"Nov 30 05:24:00.123456789123", stamp3164{0, 11, 30, 5, 24, 0, 123456789}, 28},
		{"Nov 30 05:24:00.", stamp3164{0, 11, 30, 5, 24, 0, 0}, 15},
		{"Nov 30 05:24:0", stamp3164{}, 0},
		{"Nov 30 5:24:00x", stamp3164{}, 0},
		{"nov 30 05:24:00", stamp3164{}, 0},
		{"Nov  30 05:24:00", stamp3164{0, 11, 30, 5, 24, 0, 0}, 16},
		{"Nov 123 05:24:00", stamp3164{}, 0},
		{"Nov 30 202 05:24:00", stamp3164{}, 0},
	} {
		st, n := scan3164([]byte(tc.in))
		if n != tc.n || (n > 0 && st != tc.want) {
			t.Errorf("scan3164(%q) = %+v, %d; want %+v, %d", tc.in, st, n, tc.want, tc.n)
		}
	}
	// Every prefix of a valid timestamp either scans to a shorter stamp
	// or not at all, never past its end.
	full := "Dec 31 2025 23:59:59.123"
	for i := range len(full) {
		if _, n := scan3164([]byte(full[:i])); n > i {
			t.Fatalf("scan3164(%q) = %d", full[:i], n)
		}
	}
}
