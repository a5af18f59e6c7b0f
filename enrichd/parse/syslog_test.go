package parse

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// evString renders an Event compactly for comparisons; nil fields are
// omitted, empty non-nil fields show as k="".
func evString(ev *Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s fac=%d sev=%d", ev.Format, ev.Facility, ev.Severity)
	if ev.Malformed {
		b.WriteString(" MALFORMED")
	}
	for _, f := range []struct {
		name string
		v    []byte
	}{
		{"ts", ev.Timestamp}, {"host", ev.Host}, {"app", ev.App}, {"pid", ev.ProcID},
		{"msgid", ev.MsgID}, {"sd", ev.StructuredData}, {"msg", ev.Message},
	} {
		if f.v != nil {
			fmt.Fprintf(&b, " %s=%q", f.name, f.v)
		}
	}
	return b.String()
}

const dirty5424 = `<165>1 2003-10-11T22:14:15.003Z dirty.example.com dirtyapp 99 DIRTY [x@1 a="b"] dirty message`

func TestParseSyslog(t *testing.T) {
	var ev Event
	f := func(in, want string) {
		t.Helper()
		if err := ParseSyslog([]byte(dirty5424), &ev); err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ {
			if err := ParseSyslog([]byte(in), &ev); err != nil {
				t.Errorf("ParseSyslog(%q) run %d: %v", in, run, err)
				return
			}
			if got := evString(&ev); got != want {
				t.Errorf("ParseSyslog(%q) run %d:\n got %s\nwant %s", in, run, got, want)
				return
			}
			if string(ev.Raw) != in {
				t.Errorf("Raw = %q", ev.Raw)
			}
		}
	}

	// RFC 5424 section 6.5 examples.
	f("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' failed for lonvick on /dev/pts/8",
		`rfc5424 fac=4 sev=2 ts="2003-10-11T22:14:15.003Z" host="mymachine.example.com" app="su" msgid="ID47" msg="'su root' failed for lonvick on /dev/pts/8"`)
	f("<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
		`rfc5424 fac=20 sev=5 ts="2003-08-24T05:14:15.000003-07:00" host="192.0.2.1" app="myproc" pid="8710" msg="%% It's time to make the do-nuts."`)
	f("<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"] \xEF\xBB\xBFAn application event log entry...",
		`rfc5424 fac=20 sev=5 ts="2003-10-11T22:14:15.003Z" host="mymachine.example.com" app="evntslog" msgid="ID47" sd="[exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"]" msg="An application event log entry..."`)
	f(`<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]`,
		`rfc5424 fac=20 sev=5 ts="2003-10-11T22:14:15.003Z" host="mymachine.example.com" app="evntslog" msgid="ID47" sd="[exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"][examplePriority@32473 class=\"high\"]"`)

	// gen-events.py lines.
	f(`<134>1 2026-11-30T05:24:00.000Z web-18 app 24065 login - cust=679127 src=102.24.37.211 action=login`,
		`rfc5424 fac=16 sev=6 ts="2026-11-30T05:24:00.000Z" host="web-18" app="app" pid="24065" msgid="login" msg="cust=679127 src=102.24.37.211 action=login"`)
	f(`<134>Nov 30 05:24:00 web-18 app[24065]: cust=679127 src=102.24.37.211 action=login`,
		`rfc3164 fac=16 sev=6 ts="Nov 30 05:24:00" host="web-18" app="app" pid="24065" msg="cust=679127 src=102.24.37.211 action=login"`)

	// logger(1) from bsdutils, captured from a TCP listener.
	f(`<156>Nov 30 06:16:21 vm myapp: hello world 3164`,
		`rfc3164 fac=19 sev=4 ts="Nov 30 06:16:21" host="vm" app="myapp" msg="hello world 3164"`)
	f(`<156>Nov 30 06:16:21 vm myapp[3480]: hello octet 3164`,
		`rfc3164 fac=19 sev=4 ts="Nov 30 06:16:21" host="vm" app="myapp" pid="3480" msg="hello octet 3164"`)
	f(`<13>1 2026-11-30T06:16:21.651469+00:00 vm myapp - ID47 [timeQuality tzKnown="1" isSynced="0"][exampleSDID@32473 iut="3" eventSource="App\"li\\cation"] hello 5424`,
		`rfc5424 fac=1 sev=5 ts="2026-11-30T06:16:21.651469+00:00" host="vm" app="myapp" msgid="ID47" sd="[timeQuality tzKnown=\"1\" isSynced=\"0\"][exampleSDID@32473 iut=\"3\" eventSource=\"App\\\"li\\\\cation\"]" msg="hello 5424"`)
	f("<13>1 2026-11-30T06:16:21.655003+00:00 vm myapp - - [timeQuality tzKnown=\"1\" isSynced=\"0\"] octet 5424 \xc3\xbcn\xc3\xafcode",
		`rfc5424 fac=1 sev=5 ts="2026-11-30T06:16:21.655003+00:00" host="vm" app="myapp" sd="[timeQuality tzKnown=\"1\" isSynced=\"0\"]" msg="octet 5424 ünïcode"`)
	f(`<13>1 - - myapp - - - notime nohost`,
		`rfc5424 fac=1 sev=5 app="myapp" msg="notime nohost"`)
	f(`<13>1 2026-11-30T06:16:21.662321+00:00 vm myapp - - - notq`,
		`rfc5424 fac=1 sev=5 ts="2026-11-30T06:16:21.662321+00:00" host="vm" app="myapp" msg="notq"`)

	// RFC 5424 details.
	f(`<0>1 - - - - - -`, `rfc5424 fac=0 sev=0`)
	f(`<191>1 - - - - - - `, `rfc5424 fac=23 sev=7`)
	f(`<14>1 - h a p m [id k="a\]b\"c\\"]`, `rfc5424 fac=1 sev=6 host="h" app="a" pid="p" msgid="m" sd="[id k=\"a\\]b\\\"c\\\\\"]"`)
	f(`<14>1 - h a p m [id k="]"] msg`, `rfc5424 fac=1 sev=6 host="h" app="a" pid="p" msgid="m" sd="[id k=\"]\"]" msg="msg"`)
	f(`<14>1 - h a p m [id] [x] msg`, `rfc5424 fac=1 sev=6 host="h" app="a" pid="p" msgid="m" sd="[id]" msg="[x] msg"`)
	f("<14>1 - h a p m - \xEF\xBB\xBF", `rfc5424 fac=1 sev=6 host="h" app="a" pid="p" msgid="m" msg=""`)
	f(`<14>1 - h a p m -  two  spaces`, `rfc5424 fac=1 sev=6 host="h" app="a" pid="p" msgid="m" msg=" two  spaces"`)
	// Truncated headers and SD.
	f(`<14>1 2020-01-01T00:00:00Z host`, `rfc5424 fac=1 sev=6 MALFORMED ts="2020-01-01T00:00:00Z" host="host"`)
	f(`<14>1 - h a p m `, `rfc5424 fac=1 sev=6 MALFORMED host="h" app="a" pid="p" msgid="m"`)
	f(`<14>1 - h a p m [id k="v`, `rfc5424 fac=1 sev=6 MALFORMED host="h" app="a" pid="p" msgid="m" sd="[id k=\"v"`)
	f(`<14>1 - h a p m [id k="v\"]`, `rfc5424 fac=1 sev=6 MALFORMED host="h" app="a" pid="p" msgid="m" sd="[id k=\"v\\\"]"`)
	f(`<14>1 - h a p m msg without sd`, `rfc5424 fac=1 sev=6 MALFORMED host="h" app="a" pid="p" msgid="m" msg="msg without sd"`)

	// RFC 3164 variants.
	f(`<13>Jan  5 01:02:03 host tag: m`, `rfc3164 fac=1 sev=5 ts="Jan  5 01:02:03" host="host" app="tag" msg="m"`)
	f(`<13>Jan 15 01:02:03.123456 host tag[1]: m`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03.123456" host="host" app="tag" pid="1" msg="m"`)
	f(`<13>Jan 15 01:02:03 tag[1]: no host`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" app="tag" pid="1" msg="no host"`)
	f(`<13>Jan 15 01:02:03 tag: no host`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" app="tag" msg="no host"`)
	f(`<13>Jan 15 01:02:03 host free text`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" msg="free text"`)
	f(`<13>Jan 15 01:02:03 host see http://x`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" msg="see http://x"`)
	f(`<13>Jan 15 01:02:03 host http://x`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" msg="http://x"`)
	f(`<13>Jan 15 01:02:03 host tag[12] m`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" app="tag" pid="12" msg="m"`)
	f(`<13>Jan 15 01:02:03 host`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host"`)
	f(`<13>Jan 15 01:02:03`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03"`)
	f(`<13>2026-11-30T05:24:00.123456+01:00 web-1 sshd[77]: Accepted`, `rfc3164 fac=1 sev=5 ts="2026-11-30T05:24:00.123456+01:00" host="web-1" app="sshd" pid="77" msg="Accepted"`)
	f(`<13>2026-11-30T05:24:00Z web-1 sshd: Accepted`, `rfc3164 fac=1 sev=5 ts="2026-11-30T05:24:00Z" host="web-1" app="sshd" msg="Accepted"`)
	f(`<13>myapp: no timestamp`, `rfc3164 fac=1 sev=5 app="myapp" msg="no timestamp"`)
	f(`<13>just text`, `rfc3164 fac=1 sev=5 msg="just text"`)
	f(`<13>Foo 15 01:02:03 host x`, `rfc3164 fac=1 sev=5 msg="Foo 15 01:02:03 host x"`)
	f(`<13>10 apples`, `rfc3164 fac=1 sev=5 msg="10 apples"`)
	f(`<13>0 zero version`, `rfc3164 fac=1 sev=5 msg="0 zero version"`)
	f(`<13>`, `rfc3164 fac=1 sev=5`)

	// No valid PRI: raw and malformed.
	for _, in := range []string{"no pri", "<>x", "<192>1 - - - - - -", "<1234>x", "<1a>x", "<13", "<", "13>x", " <13>x"} {
		f(in, fmt.Sprintf("unknown fac=-1 sev=-1 MALFORMED msg=%q", in))
	}
}

func TestParseSyslogEmpty(t *testing.T) {
	var ev Event
	if err := ParseSyslog(nil, &ev); err != ErrEmpty || !ev.Malformed {
		t.Fatalf("err = %v, Malformed = %v", err, ev.Malformed)
	}
}

func readLines(t testing.TB, name string) []string {
	t.Helper()
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil || len(lines) == 0 {
		t.Fatalf("%s: %d lines, %v", name, len(lines), err)
	}
	return lines
}

// TestParseSyslogGenEvents checks every line of the gen-events.py samples.
func TestParseSyslogGenEvents(t *testing.T) {
	x := NewExtractor([]string{"cust", "src", "action"})
	vals := make([][]byte, 3)
	for _, tc := range []struct {
		file   string
		format Format
	}{
		{"testdata/gen-events-rfc5424.txt", FormatRFC5424},
		{"testdata/gen-events-rfc3164.txt", FormatRFC3164},
	} {
		var ev Event
		for _, line := range readLines(t, tc.file) {
			for run := 0; run < 2; run++ {
				if err := ParseSyslog([]byte(line), &ev); err != nil || ev.Malformed || ev.Format != tc.format {
					t.Fatalf("%q: err=%v %s", line, err, evString(&ev))
				}
				if ev.Facility != 16 || ev.Severity != 6 || !strings.HasPrefix(string(ev.Host), "web-") ||
					string(ev.App) != "app" || len(ev.ProcID) == 0 || !strings.HasPrefix(string(ev.Message), "cust=") {
					t.Fatalf("%q: %s", line, evString(&ev))
				}
				x.Extract(ev.Message, vals)
				if vals[0] == nil || vals[1] == nil || vals[2] == nil {
					t.Fatalf("%q: missing values %q", line, vals)
				}
				if tc.format == FormatRFC5424 && string(ev.MsgID) != string(vals[2]) {
					t.Fatalf("%q: msgid %q action %q", line, ev.MsgID, vals[2])
				}
			}
		}
	}
}

func TestEachSDParam(t *testing.T) {
	f := func(sd, want string) {
		t.Helper()
		var b strings.Builder
		EachSDParam([]byte(sd), func(id, name, value []byte) bool {
			fmt.Fprintf(&b, "%s/%s=%s|", id, name, AppendSDUnescape(nil, value))
			return true
		})
		if got := b.String(); got != want {
			t.Errorf("EachSDParam(%q)\n got %q\nwant %q", sd, got, want)
		}
	}
	f(``, ``)
	f(`-`, ``)
	f(`[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]`,
		`exampleSDID@32473/iut=3|exampleSDID@32473/eventSource=Application|exampleSDID@32473/eventID=1011|examplePriority@32473/class=high|`)
	f(`[id k="a\]b\"c\\d\e"]`, `id/k=a]b"c\d\e|`)
	f(`[id][id2 k=""]`, `id/=|id2/k=|`)
	f(`[id k="v"`, `id/k=v|`) // unterminated element: params so far
	f(`[id k=v]`, ``)         // unquoted value: stop
	f(`[id k="v\"]`, ``)      // unterminated value
	f(`[a x="1"]garbage[b y="2"]`, `a/x=1|`)

	// Early stop.
	n := 0
	EachSDParam([]byte(`[a x="1" y="2"][b z="3"]`), func(id, name, value []byte) bool { n++; return false })
	if n != 1 {
		t.Errorf("early stop: %d calls", n)
	}
}

func TestAppendTimestampRFC3339(t *testing.T) {
	now := time.Date(2026, time.November, 30, 5, 24, 0, 987654321, time.UTC)
	f := func(ts string, now time.Time, want string) {
		t.Helper()
		ev := Event{Timestamp: []byte(ts)}
		if ts == "<nil>" {
			ev.Timestamp = nil
		}
		got := string(AppendTimestampRFC3339([]byte("x"), &ev, now))
		if got != "x"+want {
			t.Errorf("AppendTimestampRFC3339(%q, now=%v) = %q, want %q", ts, now, got[1:], want)
		}
	}
	f("2003-10-11T22:14:15.003Z", now, "2003-10-11T22:14:15.003Z")
	f("2003-08-24T05:14:15.000003-07:00", now, "2003-08-24T12:14:15.000Z")
	f("2026-11-30T06:16:21.651469+00:00", now, "2026-11-30T06:16:21.651Z")
	f("2026-01-01T00:30:00+01:00", now, "2025-12-31T23:30:00.000Z")
	f("2026-11-30T06:16:21.9999999999z", now, "2026-11-30T06:16:21.999Z")
	f("2026-11-30t06:16:21Z", now, "2026-11-30T06:16:21.000Z")
	f("Nov 30 05:24:00", now, "2026-11-30T05:24:00.000Z")
	f("Jan  5 01:02:03.5", now, "2026-01-05T01:02:03.500Z")
	f("Jan  5 01:02:03", time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), "2027-01-05T01:02:03.000Z")
	f("Dec 31 23:59:59", now, "2026-12-31T23:59:59.000Z")
	jan := time.Date(2027, time.January, 1, 0, 0, 5, 0, time.UTC)
	f("Dec 31 23:59:59", jan, "2026-12-31T23:59:59.000Z")
	f("Feb 29 12:00:00", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), "2024-02-29T12:00:00.000Z")
	f("Nov 30 05:24:00", time.Date(2026, 11, 30, 7, 0, 0, 0, time.FixedZone("x", 3600)), "2026-11-30T04:24:00.000Z")
	// Unparseable: fall back to now.
	for _, ts := range []string{"<nil>", "", "-", "Feb 29 12:00:00", "Nov 31 05:24:00", "Nov 30 24:00:00",
		"2026-13-01T00:00:00Z", "2026-11-30T05:24:00", "2026-11-30T05:24:00+1:00", "2026-11-30 05:24:00Z",
		"2026-11-30T05:24:00.Z", "2026-11-30T05:24:00Zjunk", "Nov 30 05:24"} {
		f(ts, now, "2026-11-30T05:24:00.987Z")
	}
}

// TestIsUTCMilli: the word-wise check accepts exactly what time.Parse
// accepts in the layout YYYY-MM-DDTHH:MM:SS.mmmZ with seconds up to 59:
// every byte of valid timestamps replaced by each byte of a set, and the
// edges of every field.
func TestIsUTCMilli(t *testing.T) {
	ref := func(b []byte) bool {
		if len(b) != 24 || b[17] > '5' {
			return false
		}
		for i, c := range []byte("0000-00-00T00:00:00.000Z") {
			if c == '0' && (b[i] < '0' || b[i] > '9') || c != '0' && b[i] != c {
				return false // time.Parse takes a sign or a comma in the fraction
			}
		}
		_, err := time.Parse("2006-01-02T15:04:05.000Z", string(b))
		return err == nil
	}
	check := func(s string) {
		t.Helper()
		if got, want := isUTCMilli([]byte(s)), ref([]byte(s)); got != want {
			t.Fatalf("isUTCMilli(%q) = %v, want %v", s, got, want)
		}
	}
	valid := []string{"2026-11-30T05:24:00.000Z", "2024-02-29T23:59:59.999Z", "0001-01-01T00:00:00.000Z", "9999-12-31T12:30:45.123Z"}
	for _, v := range valid {
		check(v)
		check(v[:23])
		check(v + "Z")
		for i := range len(v) {
			for _, c := range []byte("0123456789:-.TZtz /\x00\x7f\xff") {
				b := []byte(v)
				b[i] = c
				check(string(b))
				b[i] = c + 0x10 // a digit's neighbours in other nibbles
				check(string(b))
			}
		}
	}
	for _, s := range []string{"2023-02-29T00:00:00.000Z", "2026-04-31T00:00:00.000Z", "2026-00-10T00:00:00.000Z",
		"2026-13-10T00:00:00.000Z", "2026-01-00T00:00:00.000Z", "2026-01-32T00:00:00.000Z", "2026-01-01T24:00:00.000Z",
		"2026-01-01T00:60:00.000Z", "2026-01-01T00:00:60.000Z", "2026-01-01T00:00:00,000Z", "2026-01-01 00:00:00.000Z"} {
		check(s)
	}
}
