package parse

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
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
	// A TAG without ':' is followed directly by the message.
	f(`<13>Jan 15 01:02:03 host free text`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" app="free" msg="text"`)
	f(`<13>Jan 15 01:02:03 host see http://x`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" app="see" msg="http://x"`)
	f(`<13>Jan 15 01:02:03 host http://x`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" app="http" msg="//x"`)
	f(`<13>Jan 15 01:02:03 host tag[12] m`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host" app="tag" pid="12" msg="m"`)
	f(`<13>Jan 15 01:02:03 host`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03" host="host"`)
	f(`<13>Jan 15 01:02:03`, `rfc3164 fac=1 sev=5 ts="Jan 15 01:02:03"`)
	f(`<13>2026-11-30T05:24:00.123456+01:00 web-1 sshd[77]: Accepted`, `rfc3164 fac=1 sev=5 ts="2026-11-30T05:24:00.123456+01:00" host="web-1" app="sshd" pid="77" msg="Accepted"`)
	f(`<13>2026-11-30T05:24:00Z web-1 sshd: Accepted`, `rfc3164 fac=1 sev=5 ts="2026-11-30T05:24:00Z" host="web-1" app="sshd" msg="Accepted"`)
	f(`<13>myapp: no timestamp`, `rfc3164 fac=1 sev=5 app="myapp" msg="no timestamp"`)
	// Without a timestamp, no HOST: the first word is the TAG.
	f(`<13>just text`, `rfc3164 fac=1 sev=5 app="just" msg="text"`)
	f(`<13>Foo 15 01:02:03 host x`, `rfc3164 fac=1 sev=5 app="Foo" msg="15 01:02:03 host x"`)
	f(`<13>10 apples`, `rfc3164 fac=1 sev=5 app="10" msg="apples"`)
	f(`<13>0 zero version`, `rfc3164 fac=1 sev=5 app="0" msg="zero version"`)
	f(`<13>`, `rfc3164 fac=1 sev=5`)

	// No valid PRI: raw and malformed.
	for _, in := range []string{"no pri", "<>x", "<192>1 - - - - - -", "<1234>x", "<1a>x", "<13", "<", "13>x", " <13>x"} {
		f(in, fmt.Sprintf("unknown fac=-1 sev=-1 MALFORMED msg=%q", in))
	}
}

func TestParseSyslogEmpty(t *testing.T) {
	var ev Event
	if err := ParseSyslog(nil, &ev); !errors.Is(err, ErrEmpty) || !ev.Malformed {
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
