package parse

import (
	"encoding/binary"
	"time"
)

// AppendTimestampRFC3339 appends the event time to dst as an RFC 3339 UTC
// timestamp with milliseconds ("2006-01-02T15:04:05.000Z"). It uses the
// event's timestamp when it parses (RFC 3339 with any offset, or RFC 3164
// "Mmm dd hh:mm:ss" with the variants ParseSyslog reads), and now
// otherwise.
//
// RFC 3164 timestamps carry no zone: they are read in now's location (pass
// now.UTC() to treat them as UTC). Without a year they take now's year,
// moved back a year for a December timestamp received in January and
// forward a year for a January timestamp received in December (as
// syslog-ng does; rsyslog takes the year of its clock). Fractions are
// truncated to milliseconds.
func AppendTimestampRFC3339(dst []byte, ev *Event, now time.Time) []byte {
	if isUTCMilli(ev.Timestamp) {
		// Already in the output form (what most RFC 5424 senders send):
		// copy it through.
		return append(dst, ev.Timestamp...)
	}
	t, ok := parseTimestamp(ev.Timestamp, now)
	if !ok {
		t = now
	}
	return appendRFC3339Milli(dst, t.UTC())
}

// isUTCMilli reports whether b is exactly YYYY-MM-DDTHH:MM:SS.mmmZ with a
// valid date and time (seconds up to 59). The pattern is checked 8 bytes at
// a time.
func isUTCMilli(b []byte) bool {
	if len(b) != 24 {
		return false
	}
	le := binary.LittleEndian
	for k := range 3 {
		// Bytes of x outside the digits are 0; within them, 0 to 9.
		x, m := le.Uint64(b[8*k:])^utcMilliTmpl[k], utcMilliDigits[k]
		if x&^m != 0 || x&m&hiNibbles != 0 || (x+m&sixes)&m&hiNibbles != 0 {
			return false
		}
	}
	year := num2(b[0])*1000 + num2(b[1])*100 + num2(b[2])*10 + num2(b[3])
	return b[17] <= '5' && validDate(year, num2(b[5])*10+num2(b[6]), num2(b[8])*10+num2(b[9]),
		num2(b[11])*10+num2(b[12]), num2(b[14])*10+num2(b[15]), num2(b[17])*10+num2(b[18]))
}

const (
	hiNibbles = 0xf0f0f0f0f0f0f0f0
	sixes     = 0x0606060606060606
)

// utcMilliTmpl is the pattern isUTCMilli checks, as words with '0' for each
// digit; utcMilliDigits has 0xff in the bytes of the digits.
var utcMilliTmpl, utcMilliDigits = func() (t, d [3]uint64) {
	const pat = "0000-00-00T00:00:00.000Z"
	for i := range len(pat) {
		t[i/8] |= uint64(pat[i]) << (8 * (i % 8))
		if pat[i] == '0' {
			d[i/8] |= 0xff << (8 * (i % 8))
		}
	}
	return t, d
}()

func parseTimestamp(b []byte, now time.Time) (time.Time, bool) {
	if len(b) < 14 {
		return time.Time{}, false
	}
	if isDigit(b[0]) {
		return parseRFC3339(b)
	}
	st, n := scan3164(b)
	if n != len(b) {
		return time.Time{}, false
	}
	year := st.year
	if year == 0 {
		year = now.Year()
		switch nm := now.Month(); {
		case st.mon == 12 && nm == time.January:
			year--
		case st.mon == 1 && nm == time.December:
			year++
		}
	}
	if !validDate(year, st.mon, st.day, st.hh, st.mm, st.ss) {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(st.mon), st.day, st.hh, st.mm, st.ss, st.ns, now.Location()), true
}

func num2(c byte) int { return int(c - '0') }

// fracNanos parses ".ddd..." into nanoseconds (0 for anything else).
func fracNanos(b []byte) int {
	if len(b) < 2 || b[0] != '.' {
		return 0
	}
	ns, scale := 0, 100000000
	for _, c := range b[1:] {
		if !isDigit(c) {
			break
		}
		ns += int(c-'0') * scale
		scale /= 10
	}
	return ns
}

func daysIn(year, mon int) int {
	switch mon {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func validDate(year, mon, day, hh, mm, ss int) bool {
	return mon >= 1 && mon <= 12 && day >= 1 && day <= daysIn(year, mon) &&
		hh < 24 && mm < 60 && ss <= 60 && hh >= 0 && mm >= 0 && ss >= 0
}

// parseRFC3339 parses "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)".
func parseRFC3339(b []byte) (time.Time, bool) {
	if len(b) < 20 {
		return time.Time{}, false
	}
	for _, k := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		if !isDigit(b[k]) {
			return time.Time{}, false
		}
	}
	if b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't') || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	year := num2(b[0])*1000 + num2(b[1])*100 + num2(b[2])*10 + num2(b[3])
	mon := num2(b[5])*10 + num2(b[6])
	day := num2(b[8])*10 + num2(b[9])
	hh := num2(b[11])*10 + num2(b[12])
	mm := num2(b[14])*10 + num2(b[15])
	ss := num2(b[17])*10 + num2(b[18])
	i := 19
	ns := 0
	if b[i] == '.' {
		k := i + 1
		for k < len(b) && isDigit(b[k]) {
			k++
		}
		if k == i+1 {
			return time.Time{}, false
		}
		ns = fracNanos(b[i:k])
		i = k
	}
	if i >= len(b) {
		return time.Time{}, false
	}
	off := 0
	switch c := b[i]; c {
	case 'Z', 'z':
		i++
	case '+', '-':
		if len(b)-i < 6 || !isDigit(b[i+1]) || !isDigit(b[i+2]) || b[i+3] != ':' || !isDigit(b[i+4]) || !isDigit(b[i+5]) {
			return time.Time{}, false
		}
		oh, om := num2(b[i+1])*10+num2(b[i+2]), num2(b[i+4])*10+num2(b[i+5])
		if oh > 23 || om > 59 {
			return time.Time{}, false
		}
		off = (oh*60 + om) * 60
		if c == '-' {
			off = -off
		}
		i += 6
	default:
		return time.Time{}, false
	}
	if i != len(b) || !validDate(year, mon, day, hh, mm, ss) {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, ns, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), true
}

// appendRFC3339Milli appends t (already UTC) as 2006-01-02T15:04:05.000Z.
func appendRFC3339Milli(dst []byte, t time.Time) []byte {
	year, mon, day := t.Date()
	hh, mm, ss := t.Clock()
	ms := t.Nanosecond() / 1e6
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
	}
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(mon)/10), byte('0'+int(mon)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hh/10), byte('0'+hh%10), ':',
		byte('0'+mm/10), byte('0'+mm%10), ':',
		byte('0'+ss/10), byte('0'+ss%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
