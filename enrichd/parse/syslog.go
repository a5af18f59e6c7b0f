package parse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
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
	App            []byte // RFC 5424 APP-NAME, RFC 3164 TAG up to '[' (without "[PID]" and ':')
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
// RFC 3164 messages are read as rsyslog and syslog-ng read them (the rules,
// and which of the two is followed where they differ, are at parse3164):
// the "Mmm dd hh:mm:ss" timestamp and its variants, the RFC 3339 timestamps
// rsyslog sends, or none; then a HOST, only after a timestamp; then the
// TAG, which ends at ':' or SP, so that "host billing-api id=2" gives App
// "billing-api" and Message "id=2", as "billing-api[42]: id=2" gives App
// "billing-api", ProcID "42" and Message "id=2".
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

// parse5424 parses the RFC 5424 message after "<PRI>1 ", which starts at
// msg[i].
func parse5424(msg []byte, i int, ev *Event) {
	ev.Format = FormatRFC5424
	sp, ok := headerSpaces(msg, i)
	if !ok {
		// The header is cut short: field by field, as far as it goes.
		parse5424Fields(msg, i, ev)
		return
	}
	ev.Timestamp = token(msg, i, sp[0])
	ev.Host = token(msg, sp[0]+1, sp[1])
	ev.App = token(msg, sp[1]+1, sp[2])
	ev.ProcID = token(msg, sp[2]+1, sp[3])
	ev.MsgID = token(msg, sp[3]+1, sp[4])
	if i = sp[4] + 1; i >= len(msg) {
		ev.Malformed = true
		return
	}
	parse5424Rest(msg, i, ev)
}

// token is msg[i:j] as a header field: nil when empty or "-".
func token(msg []byte, i, j int) []byte {
	tok := msg[i:j:j]
	if len(tok) == 0 || len(tok) == 1 && tok[0] == '-' {
		return nil
	}
	return tok
}

// headerSpaces returns the indexes of the first five SPs of msg from i on,
// the ends of the five space-terminated fields of an RFC 5424 header, or
// false when msg has fewer. It looks at 8 bytes at a time.
func headerSpaces(msg []byte, i int) (sp [5]int, ok bool) {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	n := 0
	for ; i+8 <= len(msg); i += 8 {
		// The high bit of each byte of z is set where msg has a SP: a byte
		// of x is 0 exactly there, and the sum cannot carry across bytes.
		x := binary.LittleEndian.Uint64(msg[i:]) ^ 0x2020202020202020
		z := ^((x&lo7 + lo7) | x | lo7)
		for ; z != 0; z &= z - 1 {
			sp[n] = i + bits.TrailingZeros64(z)>>3
			if n++; n == 5 {
				return sp, true
			}
		}
	}
	for ; i < len(msg); i++ {
		if msg[i] == ' ' {
			sp[n] = i
			if n++; n == 5 {
				return sp, true
			}
		}
	}
	return sp, false
}

// parse5424Fields is parse5424 one field at a time, for a header cut
// short.
func parse5424Fields(msg []byte, i int, ev *Event) {
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
	parse5424Rest(msg, i, ev)
}

// parse5424Rest parses the structured data and message at msg[i:], after
// the header.
func parse5424Rest(msg []byte, i int, ev *Event) {
	// STRUCTURED-DATA = NILVALUE / 1*SD-ELEMENT
	switch msg[i] {
	case '-':
		i++
	case '[':
		end := sdEnd(msg, i)
		if end < 0 {
			ev.StructuredData = msg[i:]
			ev.Malformed = true
			return
		}
		ev.StructuredData = msg[i:end:end]
		i = end
	default:
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
	element:
		for {
			if i >= len(msg) {
				return -1
			}
			c := msg[i]
			i++
			switch {
			case inQuote:
				switch c {
				case '\\':
					i++ // the escaped byte, whatever it is
				case '"':
					inQuote = false
				}
			case c == '"':
				inQuote = true
			case c == ']':
				break element
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
