package parse

import (
	"testing"
	"time"
	"unsafe"
)

// within reports whether sub is nil or lies inside msg's memory.
func within(msg, sub []byte) bool {
	if sub == nil || len(sub) == 0 {
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
