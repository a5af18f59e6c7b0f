package parse

import (
	"testing"
	"time"
)

func TestParseEventTime(t *testing.T) {
	ts := func(s string) int64 {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UnixNano()
	}
	for _, c := range []struct {
		v    string
		kind byte
		ns   int64
		st   TimeStatus
	}{
		{"2026-03-01T10:00:00Z", KindString, ts("2026-03-01T10:00:00Z"), TimeOK},
		{"2026-03-01T12:00:00.123456789+02:00", KindString, ts("2026-03-01T10:00:00.123456789Z"), TimeOK},
		{"2026-02-30T10:00:00Z", KindString, 0, TimeBad},
		{"2026-03-01 10:00:00", KindString, 0, TimeBad},
		{"yesterday", KindString, 0, TimeBad},
		{"1772359200", KindNumber, ts("2026-03-01T10:00:00Z"), TimeOK},
		{"1772359200.5", KindNumber, ts("2026-03-01T10:00:00.5Z"), TimeOK},
		{"1772359200123", KindNumber, ts("2026-03-01T10:00:00.123Z"), TimeOK},
		{"1772359200123.4", KindNumber, ts("2026-03-01T10:00:00.1234Z"), TimeOK},
		{"1772359200123456", KindNumber, ts("2026-03-01T10:00:00.123456Z"), TimeOK},
		{"1772359200123456789", KindNumber, ts("2026-03-01T10:00:00.123456789Z"), TimeOK},
		{"0", KindNumber, 0, TimeOK},
		{"-1.5", KindNumber, -1500000000, TimeOK},
		{"1e9", KindNumber, 0, TimeBad},
		{"01", KindNumber, 0, TimeBad},
		{"1.", KindNumber, 0, TimeBad},
		{"99999999999999999999", KindNumber, 0, TimeBad},
		{"9999999999999999999", KindNumber, 0, TimeBad},
		{"null", KindNull, 0, TimeMissing},
		{"true", KindBool, 0, TimeBad},
		{`{"a":1}`, KindObject, 0, TimeBad},
	} {
		ns, st := ParseEventTime([]byte(c.v), c.kind)
		if st != c.st || ns != c.ns {
			t.Errorf("ParseEventTime(%s) = %d, %d; want %d, %d", c.v, ns, st, c.ns, c.st)
		}
	}
}

func TestSyslogTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		line string
		want string
		st   TimeStatus
	}{
		{"<13>1 2026-03-01T10:00:00.250+01:00 h app - - - x", "2026-03-01T09:00:00.25Z", TimeOK},
		{"<13>Mar  1 10:00:00 h app: x", "2026-03-01T10:00:00Z", TimeOK},
		{"<13>1 - h app - - - x", "", TimeMissing},
		{"<13>1 2026-13-01T10:00:00Z h app - - - x", "", TimeBad},
		{"no pri at all", "", TimeMissing},
	} {
		var ev Event
		_ = ParseSyslog([]byte(c.line), &ev)
		ns, st := SyslogTime(&ev, now)
		if st != c.st {
			t.Errorf("%q: status %d, want %d (timestamp %q)", c.line, st, c.st, ev.Timestamp)
			continue
		}
		if st == TimeOK {
			if got := time.Unix(0, ns).UTC().Format(time.RFC3339Nano); got != c.want {
				t.Errorf("%q: %s, want %s", c.line, got, c.want)
			}
		}
	}
}
