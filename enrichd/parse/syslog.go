package parse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"
)

// Format says which syslog format ParseSyslog recognised.
type Format uint8

const (
	FormatUnknown Format = iota // no valid PRI: the line is kept raw in Message
	FormatRFC5424               // "<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG"
	FormatRFC3164               // "<PRI>Mmm dd hh:mm:ss HOST TAG[PID]: MSG" and variants
)

// String returns a short name for the format.
func (f Format) String() string {
	switch f {
	case FormatRFC5424:
		return "rfc5424"
	case FormatRFC3164:
		return "rfc3164"
	}
	return "unknown"
}

// ErrEmpty is returned by ParseSyslog for an empty message.
var ErrEmpty = errors.New("parse: empty message")

// Event is one parsed syslog message. All byte slices alias the message
// passed to ParseSyslog; nil means absent (including RFC 5424 "-" nil
// values). Reuse one Event per goroutine; ParseSyslog resets it.
type Event struct {
	Raw            []byte // the whole message as given
	Facility       int    // PRI / 8; -1 when there is no valid PRI
	Severity       int    // PRI % 8; -1 when there is no valid PRI
	Timestamp      []byte // raw timestamp text; see AppendTimestampRFC3339
	Host           []byte
	App            []byte // RFC 5424 APP-NAME, RFC 3164 TAG without "[PID]:"
	ProcID         []byte // RFC 5424 PROCID, RFC 3164 PID from TAG[PID]
	MsgID          []byte // RFC 5424 only
	StructuredData []byte // RFC 5424 only: raw "[id k=\"v\"]..." text; see EachSDParam
	Message        []byte // free-form message, BOM stripped
	Format         Format

	// Malformed is set when the message lacks a valid PRI (then Format is
	// FormatUnknown and Message holds the whole line) or when an RFC 5424
	// header or its structured data is cut short (then the fields found so
	// far are set). Callers tag such events and pass them on.
	Malformed bool
}

// Reset clears every field.
func (ev *Event) Reset() {
	*ev = Event{Facility: -1, Severity: -1}
}

var bom = [3]byte{0xEF, 0xBB, 0xBF}

// ParseSyslog parses an RFC 5424 or RFC 3164 message into ev, which it
// resets first. The fields alias msg.
//
// A message without a valid PRI ("<0>" to "<191>") is not an error: ev
// gets Malformed = true, Format = FormatUnknown and Message = msg. The
// only error is ErrEmpty, for an empty msg.
//
// RFC 3164 parsing accepts the "Mmm dd hh:mm:ss" timestamp (with optional
// fractional seconds) and the RFC 3339 timestamps rsyslog emits, or no
// timestamp at all; the host is taken to be missing when the first word
// looks like a tag ("app:" or "app[pid]..."), and the tag is only taken
// when it is followed by ':' or "[pid]", so "host free text" leaves App nil.
func ParseSyslog(msg []byte, ev *Event) error {
	ev.Reset()
	ev.Raw = msg
	if len(msg) == 0 {
		ev.Malformed = true
		return ErrEmpty
	}
	pri, i := parsePRI(msg)
	if i < 0 {
		ev.Malformed = true
		ev.Message = msg
		return nil
	}
	ev.Facility, ev.Severity = pri>>3, pri&7

	// RFC 5424 is "1 " after the PRI (the only VERSION defined).
	if len(msg)-i >= 2 && msg[i] == '1' && msg[i+1] == ' ' {
		parse5424(msg, i+2, ev)
		return nil
	}
	parse3164(msg, i, ev)
	return nil
}

// parsePRI parses "<N>" at the start of msg, returning N and the index
// after '>', or -1.
func parsePRI(msg []byte) (int, int) {
	if len(msg) < 3 || msg[0] != '<' {
		return 0, -1
	}
	n := 0
	i := 1
	for ; i < len(msg) && i <= 4; i++ {
		c := msg[i]
		if c == '>' {
			break
		}
		if !isDigit(c) {
			return 0, -1
		}
		n = n*10 + int(c-'0')
	}
	if i == 1 || i > 4 || i >= len(msg) || msg[i] != '>' || n > 191 {
		return 0, -1
	}
	return n, i + 1
}

func isDigit(c byte) bool { return c-'0' < 10 }

// field returns the SP-terminated token at msg[i:] ("-" becomes nil) and
// the index after the SP, or -1 when the message ends first.
func field(msg []byte, i int) ([]byte, int) {
	j := bytes.IndexByte(msg[i:], ' ')
	next := i + j + 1
	if j < 0 {
		j = len(msg) - i
		next = -1
	}
	tok := msg[i : i+j : i+j]
	if j == 0 || (j == 1 && tok[0] == '-') {
		tok = nil
	}
	return tok, next
}

func parse5424(msg []byte, i int, ev *Event) {
	ev.Format = FormatRFC5424
	if ev.Timestamp, i = field(msg, i); i < 0 {
		ev.Malformed = true
		return
	}
	if ev.Host, i = field(msg, i); i < 0 {
		ev.Malformed = true
		return
	}
	if ev.App, i = field(msg, i); i < 0 {
		ev.Malformed = true
		return
	}
	if ev.ProcID, i = field(msg, i); i < 0 {
		ev.Malformed = true
		return
	}
	if ev.MsgID, i = field(msg, i); i < 0 || i >= len(msg) {
		ev.Malformed = true
		return
	}
	// STRUCTURED-DATA = NILVALUE / 1*SD-ELEMENT
	if msg[i] == '-' {
		i++
	} else if msg[i] == '[' {
		end := sdEnd(msg, i)
		if end < 0 {
			ev.StructuredData = msg[i:]
			ev.Malformed = true
			return
		}
		ev.StructuredData = msg[i:end:end]
		i = end
	} else {
		// Tolerate a missing SD field: the rest is the message.
		ev.Malformed = true
		ev.Message = stripBOM(msg[i:])
		return
	}
	if i < len(msg) && msg[i] == ' ' {
		i++
	}
	if i < len(msg) {
		ev.Message = stripBOM(msg[i:])
	}
}

// sdEnd returns the index just past the last of the consecutive
// SD-ELEMENTs starting at msg[i] == '[', or -1 if one is unterminated.
func sdEnd(msg []byte, i int) int {
	for i < len(msg) && msg[i] == '[' {
		i++
		inQuote := false
		for {
			if i >= len(msg) {
				return -1
			}
			c := msg[i]
			i++
			if inQuote {
				if c == '\\' {
					i++ // the escaped byte, whatever it is
				} else if c == '"' {
					inQuote = false
				}
			} else if c == '"' {
				inQuote = true
			} else if c == ']' {
				break
			}
		}
	}
	if i > len(msg) {
		return -1
	}
	return i
}

func stripBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == bom[0] && b[1] == bom[1] && b[2] == bom[2] {
		return b[3:]
	}
	return b
}

func parse3164(msg []byte, i int, ev *Event) {
	ev.Format = FormatRFC3164
	if n := ts3164Len(msg[i:]); n > 0 {
		ev.Timestamp = msg[i : i+n : i+n]
		i += n
		for i < len(msg) && msg[i] == ' ' {
			i++
		}
		// HOST, unless the first word already looks like a tag.
		j := i
		for j < len(msg) && msg[j] != ' ' {
			j++
		}
		if j > i && !looksLikeTag(msg[i:j]) {
			ev.Host = msg[i:j:j]
			i = j
			for i < len(msg) && msg[i] == ' ' {
				i++
			}
		}
	}
	i = parseTag(msg, i, ev)
	if i < len(msg) {
		ev.Message = stripBOM(msg[i:])
	}
}

// looksLikeTag reports whether a word is "tag:" or "tag[...".
func looksLikeTag(w []byte) bool {
	if w[len(w)-1] == ':' {
		return true
	}
	for _, c := range w {
		if c == '[' {
			return true
		}
	}
	return false
}

// parseTag parses "TAG[PID]: " or "TAG: " at msg[i:] into ev.App and
// ev.ProcID and returns the index of the message; it returns i unchanged
// when there is no such tag.
func parseTag(msg []byte, i int, ev *Event) int {
	j := i
	for j < len(msg) {
		c := msg[j]
		if c == '[' || c == ':' || c == ' ' {
			break
		}
		j++
	}
	if j == i || j >= len(msg) || msg[j] == ' ' {
		return i
	}
	app := msg[i:j:j]
	var pid []byte
	k := j
	if msg[k] == '[' {
		e := k + 1
		for e < len(msg) && msg[e] != ']' && msg[e] != ' ' {
			e++
		}
		if e >= len(msg) || msg[e] != ']' {
			return i
		}
		pid = msg[k+1 : e : e]
		k = e + 1
		if k < len(msg) && msg[k] == ':' {
			k++
		}
	} else { // ':'
		k++
	}
	if k < len(msg) && msg[k] != ' ' {
		return i // "http://..." is not a tag
	}
	ev.App, ev.ProcID = app, nil
	if len(pid) > 0 {
		ev.ProcID = pid
	}
	if k < len(msg) {
		k++ // one SP after the tag
	}
	return k
}

var months = [12][3]byte{
	{'J', 'a', 'n'}, {'F', 'e', 'b'}, {'M', 'a', 'r'}, {'A', 'p', 'r'}, {'M', 'a', 'y'}, {'J', 'u', 'n'},
	{'J', 'u', 'l'}, {'A', 'u', 'g'}, {'S', 'e', 'p'}, {'O', 'c', 't'}, {'N', 'o', 'v'}, {'D', 'e', 'c'},
}

// monthIndex returns 1..12 for "Jan".."Dec", or 0.
func monthIndex(b []byte) int {
	if len(b) < 3 {
		return 0
	}
	for m := range months {
		if b[0] == months[m][0] && b[1] == months[m][1] && b[2] == months[m][2] {
			return m + 1
		}
	}
	return 0
}

// ts3164Len returns the length of a leading RFC 3164 timestamp
// ("Mmm dd hh:mm:ss" with optional ".fraction") or RFC 3339 timestamp
// followed by SP or the end of b, or 0 if there is none.
func ts3164Len(b []byte) int {
	n := 0
	switch {
	case len(b) >= 15 && monthIndex(b) > 0 && b[3] == ' ' &&
		(b[4] == ' ' || isDigit(b[4])) && isDigit(b[5]) && b[6] == ' ' &&
		isDigit(b[7]) && isDigit(b[8]) && b[9] == ':' &&
		isDigit(b[10]) && isDigit(b[11]) && b[12] == ':' &&
		isDigit(b[13]) && isDigit(b[14]):
		n = 15
		if n < len(b) && b[n] == '.' {
			k := n + 1
			for k < len(b) && isDigit(b[k]) {
				k++
			}
			if k > n+1 {
				n = k
			}
		}
	case len(b) >= 19 && isDigit(b[0]) && isDigit(b[1]) && isDigit(b[2]) && isDigit(b[3]) &&
		b[4] == '-' && isDigit(b[5]) && isDigit(b[6]) && b[7] == '-' && isDigit(b[8]) && isDigit(b[9]) &&
		(b[10] == 'T' || b[10] == 't'):
		n = 11
		for n < len(b) && b[n] != ' ' {
			n++
		}
	default:
		return 0
	}
	if n < len(b) && b[n] != ' ' {
		return 0
	}
	return n
}

// AppendTimestampRFC3339 appends the event time to dst as an RFC 3339 UTC
// timestamp with milliseconds ("2006-01-02T15:04:05.000Z"). It uses the
// event's timestamp when it parses (RFC 3339 with any offset, or RFC 3164
// "Mmm dd hh:mm:ss"), and now otherwise.
//
// RFC 3164 timestamps carry no year or zone: they are read in now's
// location (pass now.UTC() to treat them as UTC) with now's year, moved
// back a year for a December timestamp received in January and forward a
// year for a January timestamp received in December. Fractions are
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
	if len(b) < 15 {
		return time.Time{}, false
	}
	if isDigit(b[0]) {
		return parseRFC3339(b)
	}
	mon := monthIndex(b)
	if mon == 0 || ts3164Len(b) != len(b) || len(b) < 15 {
		return time.Time{}, false
	}
	day := num2(b[5])
	if b[4] != ' ' {
		day += 10 * int(b[4]-'0')
	}
	hh, mm, ss := num2(b[7])*10+num2(b[8]), num2(b[10])*10+num2(b[11]), num2(b[13])*10+num2(b[14])
	ns := fracNanos(b[15:])
	year := now.Year()
	switch nm := now.Month(); {
	case mon == 12 && nm == time.January:
		year--
	case mon == 1 && nm == time.December:
		year++
	}
	if !validDate(year, mon, day, hh, mm, ss) {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(mon), day, hh, mm, ss, ns, now.Location()), true
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

// EachSDParam calls fn for every SD-PARAM in raw RFC 5424 structured data
// (Event.StructuredData), in order, until fn returns false. An SD-ELEMENT
// without params yields one call with name and value nil.
//
// value is the raw text between the quotes: escapes (\" \\ \]) are NOT
// removed, so value aliases sd and nothing is allocated. Use
// AppendSDUnescape to decode a value that contains a backslash. Parsing
// stops quietly at the first malformed element.
func EachSDParam(sd []byte, fn func(id, name, value []byte) bool) {
	i := 0
	for i < len(sd) && sd[i] == '[' {
		i++
		s := i
		for i < len(sd) && sd[i] != ' ' && sd[i] != ']' {
			i++
		}
		if i >= len(sd) {
			return
		}
		id := sd[s:i:i]
		params := 0
		for i < len(sd) && sd[i] == ' ' {
			i++
			s = i
			for i < len(sd) && sd[i] != '=' && sd[i] != ' ' && sd[i] != ']' {
				i++
			}
			if i+1 >= len(sd) || sd[i] != '=' || sd[i+1] != '"' {
				return
			}
			name := sd[s:i:i]
			i += 2
			s = i
			for i < len(sd) && sd[i] != '"' {
				if sd[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(sd) {
				return
			}
			params++
			if !fn(id, name, sd[s:i:i]) {
				return
			}
			i++ // closing quote
		}
		if i >= len(sd) || sd[i] != ']' {
			return
		}
		i++
		if params == 0 && !fn(id, nil, nil) {
			return
		}
	}
}

// AppendSDUnescape appends an SD-PARAM value with its RFC 5424 escapes
// (\" \\ \]) removed. Any other backslash is kept, as the RFC requires.
func AppendSDUnescape(dst, value []byte) []byte {
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '\\' && i+1 < len(value) {
			if n := value[i+1]; n == '"' || n == '\\' || n == ']' {
				dst = append(dst, n)
				i++
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}
