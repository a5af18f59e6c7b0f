package parse

import (
	"testing"
	"time"
)

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
	f("Jan 5 01:02:03", now, "2026-01-05T01:02:03.000Z")
	f("Jan 05 01:02:03.25", now, "2026-01-05T01:02:03.250Z")
	// A year in the timestamp is used as it is.
	f("Jan 15 2025 01:02:03", now, "2025-01-15T01:02:03.000Z")
	f("Dec 31 2030 23:59:59", jan, "2030-12-31T23:59:59.000Z")
	f("Feb 29 2024 12:00:00", now, "2024-02-29T12:00:00.000Z")
	f("Nov 30 05:24:00", time.Date(2026, 11, 30, 7, 0, 0, 0, time.FixedZone("x", 3600)), "2026-11-30T04:24:00.000Z")
	// Unparseable: fall back to now.
	for _, ts := range []string{"<nil>", "", "-", "Feb 29 12:00:00", "Nov 31 05:24:00", "Nov 30 24:00:00",
		"2026-13-01T00:00:00Z", "2026-11-30T05:24:00", "2026-11-30T05:24:00+1:00", "2026-11-30 05:24:00Z",
		"2026-11-30T05:24:00.Z", "2026-11-30T05:24:00Zjunk", "Nov 30 05:24", "Feb 29 2025 12:00:00", "Nov 30 05:24:00:",
		"Nov 30 05:24:00 ", "Nov 30 2026  05:24:00"} {
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
