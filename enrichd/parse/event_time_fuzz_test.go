package parse

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseEventTime checks that an event time parses without a panic,
// that an RFC 3339 string time.Parse rejects is not taken (leap seconds
// aside), and that an accepted one is the instant time.Parse reads.
func FuzzParseEventTime(f *testing.F) {
	for _, s := range []string{"2026-03-01T10:00:00Z", "2026-03-01T10:00:00.5+02:00", "1772359200", "1772359200.25", "1772359200123", "-1.5", "1e9", "null"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, str bool) {
		kind := byte(KindNumber)
		if str {
			kind = KindString
		}
		ns, st := ParseEventTime([]byte(s), kind)
		if st == TimeMissing {
			t.Fatalf("%q: missing is only null", s)
		}
		if !str || st != TimeOK {
			return
		}
		// RFC 3339 allows a lower-case t and z; time.Parse does not.
		want, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
		if err != nil {
			if len(s) > 18 && s[17:19] == "60" {
				return // a leap second: time.Parse refuses it
			}
			t.Fatalf("%q accepted, time.Parse: %v", s, err)
		}
		if want.UnixNano() != ns {
			t.Fatalf("%q: %d, time.Parse %d", s, ns, want.UnixNano())
		}
	})
}
