package parse

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// within reports whether sub is empty or lies inside msg's memory.
func within(msg, sub []byte) bool {
	if len(sub) == 0 {
		return true
	}
	if len(msg) == 0 {
		return false
	}
	m0 := uintptr(unsafe.Pointer(unsafe.SliceData(msg)))
	s0 := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return s0 >= m0 && s0+uintptr(len(sub)) <= m0+uintptr(len(msg))
}

func FuzzParseSyslog(f *testing.F) {
	for _, s := range []string{
		sample5424, sample3164, dirty5424,
		"<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' failed",
		`<165>1 2003-10-11T22:14:15.003Z h evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="App\"li\\cation\]"][p@1 class="high"] msg`,
		"<13>Jan  5 01:02:03.123 host tag[1]: m", "<13>2026-11-30T05:24:00+01:00 h t: m", "<13>tag: m",
		"<14>1 - h a p m [id k=\"v", "<191>", "no pri", "<1>1 ", "<13>Feb 29 00:00:00 x",
		"<165>Dec  1 14:20:02 db-2 billing-api id=2 cust=18", "<13>Jan 15 01:02:03 host app[12 msg",
		"<13>Jan 15 01:02:03 fe80::1 app[12]x: msg", "<13>Jan 5 2026 01:02:03: cafe: m", `<13> {"a":1}`,
		"<13>Jan 15 01:02:03.000000 h abcdefghijabcdefghijabcdefghij[1 cut",
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, msg []byte) {
		var ev Event
		for run := 0; run < 2; run++ {
			err := ParseSyslog(msg, &ev)
			if (err != nil) != (len(msg) == 0) {
				t.Fatalf("err = %v for %q", err, msg)
			}
			for _, s := range [][]byte{ev.Raw, ev.Timestamp, ev.Host, ev.App, ev.ProcID, ev.MsgID, ev.StructuredData, ev.Message} {
				if !within(msg, s) {
					t.Fatalf("field %q not within msg %q", s, msg)
				}
			}
			if ev.Format == FormatUnknown {
				if len(msg) > 0 && (!ev.Malformed || string(ev.Message) != string(msg)) {
					t.Fatalf("no PRI: %s", evString(&ev))
				}
			} else if ev.Facility < 0 || ev.Facility > 23 || ev.Severity < 0 || ev.Severity > 7 {
				t.Fatalf("bad PRI: %s", evString(&ev))
			}
			ts := AppendTimestampRFC3339(nil, &ev, now)
			if _, err := time.Parse(time.RFC3339Nano, string(ts)); err != nil || len(ts) != len("2006-01-02T15:04:05.000Z") {
				t.Fatalf("timestamp %q from %q: %v", ts, ev.Timestamp, err)
			}
			if ev.Format == FormatRFC3164 {
				check3164Fields(t, msg, &ev)
			}
			if ev.Format == FormatRFC5424 {
				check5424Fields(t, msg, &ev)
			}
			EachSDParam(ev.StructuredData, func(id, name, value []byte) bool {
				if !within(msg, id) || !within(msg, name) || !within(msg, value) {
					t.Fatalf("SD param outside msg")
				}
				AppendSDUnescape(nil, value)
				return true
			})
		}
	})
}

// check3164Fields checks what the RFC 3164 rules promise of any input: the
// fields come in header order, the HOST holds no SP or '[' and does not end
// in ':', the app name holds no SP, ':' or '[', the PROCID no SP, ':' or
// ']', and nothing is empty.
func check3164Fields(t *testing.T, msg []byte, ev *Event) {
	t.Helper()
	pos := 0
	for _, f := range []struct {
		name, bad string
		v         []byte
	}{
		{"timestamp", "", ev.Timestamp}, {"host", " [", ev.Host}, {"app", " :[", ev.App},
		{"procid", " :]", ev.ProcID}, {"message", "", ev.Message},
	} {
		if f.v == nil {
			continue
		}
		if len(f.v) == 0 && f.name != "message" {
			t.Fatalf("%s empty but not nil in %q", f.name, msg)
		}
		if bytes.ContainsAny(f.v, f.bad) {
			t.Fatalf("%s %q holds one of %q, in %q", f.name, f.v, f.bad, msg)
		}
		if len(f.v) > 0 {
			off := offset(msg, f.v)
			if off < pos {
				t.Fatalf("%s %q out of order in %q", f.name, f.v, msg)
			}
			pos = off
		}
	}
	if n := len(ev.Host); n > 0 && ev.Host[n-1] == ':' {
		t.Fatalf("host %q ends in ':', in %q", ev.Host, msg)
	}
	if ev.MsgID != nil || ev.StructuredData != nil {
		t.Fatalf("RFC 3164 with a MSGID or structured data: %q", msg)
	}
}

// offset returns the position of sub (which lies within msg) in msg.
func offset(msg, sub []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(msg))))
}

// FuzzParse3164Forms builds RFC 3164 lines in the forms senders write (the
// TAG with and without [PID] and ':', each timestamp form) from fuzzed
// fields, and checks that ParseSyslog gives those fields back whenever
// each is one the form can carry: a HOST without SP, '[' or ':'; an app
// name without SP, ':' or '['; a PROCID without SP, ':' or ']'.
func FuzzParse3164Forms(f *testing.F) {
	f.Add("db-2", "billing-api", "", "id=2 cust=18", uint8(0))
	f.Add("db-2", "billing-api", "42", "id=3", uint8(1))
	f.Add("web-1", "postfix/smtpd", "123", " x", uint8(3))
	f.Add("h", "abcdefghijabcdefghijabcdefghijab", "1234", "\xef\xbb\xbfbom", uint8(5))
	f.Add("fe80::1", "app", "", "", uint8(4))
	f.Fuzz(func(t *testing.T, host, app, pid, msg string, form uint8) {
		if host == "" || strings.ContainsAny(host, " [:") || app == "" || strings.ContainsAny(app, " :[") ||
			strings.ContainsAny(pid, " :]") {
			return
		}
		stamps := [...]string{"Dec  1 14:20:02", "2026-12-01T14:20:02.123456+01:00", "Dec  1 14:20:02.123456", "Dec 1 2026 14:20:02"}
		line := "<13>" + stamps[int(form>>1)%len(stamps)] + " " + host + " " + app
		if pid != "" {
			line += "[" + pid + "]"
		}
		if form&1 == 1 {
			line += ":"
		}
		line += " " + msg
		var ev Event
		if err := ParseSyslog([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		wantMsg := strings.TrimPrefix(msg, "\xef\xbb\xbf")
		if ev.Format != FormatRFC3164 || string(ev.Host) != host || string(ev.App) != app ||
			string(ev.ProcID) != pid || (ev.ProcID == nil) != (pid == "") || string(ev.Message) != wantMsg {
			t.Fatalf("ParseSyslog(%q) = %s; want host %q app %q pid %q msg %q", line, evString(&ev), host, app, pid, wantMsg)
		}
	})
}

// check5424Fields checks that ev, parsed from the RFC 5424 message msg,
// is what parsing its header field by field gives.
func check5424Fields(t *testing.T, msg []byte, ev *Event) {
	t.Helper()
	_, i := parsePRI(msg)
	ref := Event{Raw: msg, Facility: ev.Facility, Severity: ev.Severity, Format: FormatRFC5424}
	parse5424Fields(msg, i+2, &ref)
	if got, want := evString(ev), evString(&ref); got != want {
		t.Fatalf("%q:\nparsed     %s\nfield by field %s", msg, got, want)
	}
	for _, f := range [][2][]byte{{ev.Timestamp, ref.Timestamp}, {ev.Host, ref.Host}, {ev.App, ref.App}, {ev.ProcID, ref.ProcID}, {ev.MsgID, ref.MsgID}, {ev.Message, ref.Message}} {
		if (f[0] == nil) != (f[1] == nil) || len(f[0]) > 0 && (&f[0][0] != &f[1][0] || cap(f[0]) != cap(f[1])) {
			t.Fatalf("%q: a field differs from field by field in where it is", msg)
		}
	}
}

// TestParse5424Header: headers of every field length around the 8-byte
// words the SPs are found in, NILVALUEs, empty fields and headers cut
// short parse as field by field.
func TestParse5424Header(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ev Event
	for range 50000 {
		msg := []byte("<14>1 ")
		nf := 3 + rng.IntN(4)
		for k := range nf {
			switch rng.IntN(6) {
			case 0:
				msg = append(msg, '-')
			case 1:
			default:
				for range rng.IntN(20) {
					msg = append(msg, "ab-:[]=\"x!\xa0"[rng.IntN(11)])
				}
			}
			if k < nf-1 || rng.IntN(2) == 0 {
				msg = append(msg, ' ')
			}
		}
		msg = append(msg, []string{"", "-", "- m", "[a b=\"c\"] m", "x y", "-x"}[rng.IntN(6)]...)
		if err := ParseSyslog(msg, &ev); err != nil || ev.Format != FormatRFC5424 {
			t.Fatalf("%q: %v, %s", msg, err, evString(&ev))
		}
		check5424Fields(t, msg, &ev)
	}
}
