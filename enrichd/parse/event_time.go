package parse

import (
	"math"
	"time"
)

// TimeStatus says what an event time read from an event is.
type TimeStatus uint8

// Time statuses.
const (
	TimeOK      TimeStatus = iota
	TimeMissing            // the event has no time there (no timestamp, "-", an absent member or null)
	TimeBad                // the event has one that does not parse
)

// SyslogTime returns the time of ev's syslog timestamp in Unix
// nanoseconds, read as AppendTimestampRFC3339 reads it (RFC 3339 with any
// offset, RFC 3164 in now's location and year).
func SyslogTime(ev *Event, now time.Time) (int64, TimeStatus) {
	if len(ev.Timestamp) == 0 || string(ev.Timestamp) == "-" {
		return 0, TimeMissing
	}
	t, ok := parseTimestamp(ev.Timestamp, now)
	if !ok {
		return 0, TimeBad
	}
	return t.UnixNano(), TimeOK
}

// ParseEventTime reads v, a JSON value as JSONField gives it (kind), as
// an event time in Unix nanoseconds: a string is an RFC 3339 timestamp
// (any offset, any fraction); a number is a Unix epoch, with an optional
// fraction and sign, read in seconds when its integer part is below
// 1e11 (up to the year 5138), in milliseconds below 1e14, in
// microseconds below 1e17, and in nanoseconds above (as Elasticsearch,
// Splunk and most JSON loggers write them). null is TimeMissing; any
// other value, an exponent, or a time outside the years 1678 to 2262
// (what int64 nanoseconds hold) is TimeBad.
func ParseEventTime(v []byte, kind byte) (int64, TimeStatus) {
	switch kind {
	case KindNull:
		return 0, TimeMissing
	case KindString:
		t, ok := parseRFC3339(v)
		if !ok || t.Year() < 1678 || t.Year() > 2261 {
			return 0, TimeBad
		}
		return t.UnixNano(), TimeOK
	case KindNumber:
		if ns, ok := parseEpoch(v); ok {
			return ns, TimeOK
		}
	}
	return 0, TimeBad
}

// parseEpoch parses [-]digits[.digits] as ParseEventTime describes.
func parseEpoch(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	i := 0
	var whole uint64
	for i < len(b) && isDigit(b[i]) {
		if i >= 19 {
			return 0, false
		}
		whole = whole*10 + uint64(b[i]-'0')
		i++
	}
	if i == 0 || (i > 1 && b[0] == '0') {
		return 0, false
	}
	frac := b[i:i]
	if i < len(b) {
		if b[i] != '.' {
			return 0, false
		}
		frac = b[i+1:]
		for _, c := range frac {
			if !isDigit(c) {
				return 0, false
			}
		}
		if len(frac) == 0 {
			return 0, false
		}
	}
	// unit is the nanoseconds of one unit of the number.
	var unit uint64
	switch {
	case whole < 1e11:
		unit = 1e9
	case whole < 1e14:
		unit = 1e6
	case whole < 1e17:
		unit = 1e3
	default:
		unit = 1
	}
	if whole > math.MaxInt64/unit {
		return 0, false
	}
	ns := whole * unit
	// The fraction, to the nanosecond (further digits truncated).
	scale := unit / 10
	for _, c := range frac {
		if scale == 0 {
			break
		}
		ns += uint64(c-'0') * scale
		scale /= 10
	}
	if ns > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(ns), true
	}
	return int64(ns), true
}
