package parse

// RFC 3164 ("BSD syslog") headers, read as rsyslog (pmrfc3164 and its
// programname) and syslog-ng (syslog-format) read them. Where the two
// differ, the rule followed is named here and in docs/enrichd.md; the
// interop tests (interop/syslog, TestReceiverParse) send the same bytes to
// both programs and to enrichd and compare.
//
//	<PRI>[TIMESTAMP SP [HOST SP]]TAG[":"][SP]MSG
//
// The rules:
//
//   - A body that is only blanks before '{' or '[' has no header (a JSON or
//     bracketed payload; rsyslog's rule, syslog-ng would make `{"a"` a TAG).
//   - Blanks before the timestamp are skipped. The timestamp is
//     "Mmm dd hh:mm:ss" (day space-padded, zero-padded or a single digit),
//     optionally with a year before the time ("Mmm dd yyyy hh:mm:ss"), a
//     fraction, and a ':' after it (Cisco), or an RFC 3339 timestamp.
//   - Only after a timestamp comes a HOST (RFC 3164 4.3.3, syslog-ng; rsyslog
//     looks for one without a timestamp too). The HOST is the first word
//     when it is followed by SP or ends the message, holds no '[', holds a
//     ':' only as an IPv6 address does (syslog-ng's test) and does not end
//     in ':' (rsyslog: "app: msg" has a TAG and no HOST). Any other byte is
//     allowed, as syslog-ng allows it (rsyslog takes only letters, digits,
//     '.', '_' and '-', ending in a letter or digit, and reads "host-" or
//     "fe80::1" as the TAG).
//   - The TAG runs to the first ':' or SP (rsyslog; RFC 3164 would end it at
//     any character that is not alphanumeric, which neither program does).
//     It has no length limit: RFC 3164 allows 32 characters, but both
//     programs read longer TAGs whole (rsyslog's forwarding formats cut the
//     TAG they send to 32 bytes, which can cut an app name or a "[pid]").
//   - The app name is the TAG up to its first '[' (syslog-ng; rsyslog's
//     programname also ends at '/' and at bytes that are not printable
//     ASCII, unless parser.permitSlashInProgramname is set). The PROCID is
//     what lies between that '[' and the next ']' in the TAG; a '[' without
//     its ']' (a cut TAG) gives no PROCID (rsyslog; syslog-ng takes what
//     follows the '[').
//   - One ':' ending the TAG and then one SP are not part of the message
//     (syslog-ng; rsyslog keeps the SP at the start of its msg property).
//     So a TAG followed directly by the message, "billing-api id=2", has
//     app name billing-api and message "id=2", as for both programs.
func parse3164(msg []byte, i int, ev *Event) {
	ev.Format = FormatRFC3164
	j := i
	for j < len(msg) && (msg[j] == ' ' || msg[j] == '\t') {
		j++
	}
	if j < len(msg) && (msg[j] == '{' || msg[j] == '[') {
		ev.Message = msg[i:]
		return
	}
	for i < len(msg) && msg[i] == ' ' {
		i++
	}
	if n, next := ts3164Len(msg[i:]); n > 0 {
		ev.Timestamp = msg[i : i+n : i+n]
		i = skipSP(msg, i+next)
		if h := hostLen(msg[i:]); h > 0 {
			ev.Host = msg[i : i+h : i+h]
			i = skipSP(msg, i+h)
		}
	}
	i = parseTag(msg, i, ev)
	if i < len(msg) {
		ev.Message = stripBOM(msg[i:])
	}
}

func skipSP(msg []byte, i int) int {
	for i < len(msg) && msg[i] == ' ' {
		i++
	}
	return i
}

// stop3164 marks the bytes that end or split a HOST or a TAG: SP, ':',
// '[' and ']'.
var stop3164 = [256]bool{' ': true, ':': true, '[': true, ']': true}

// hostLen returns the length of the HOST at the start of b, or 0 when the
// first word is not one (see parse3164).
func hostLen(b []byte) int {
	n, colon := 0, -1
	for ; n < len(b); n++ {
		if c := b[n]; stop3164[c] {
			if c == ' ' {
				break
			}
			if c == '[' {
				return 0
			}
			if c == ':' {
				colon = n
			}
		}
	}
	if n == 0 || b[n-1] == ':' || colon >= 0 && !ipv6Prefix(b[:colon]) {
		return 0
	}
	return n
}

// ipv6Prefix reports whether b could begin an IPv6 address, as syslog-ng
// decides whether a ':' may be part of a HOST: hex digits in groups of at
// most four, fewer than seven ':' (b is what precedes another ':').
func ipv6Prefix(b []byte) bool {
	colons, group := 0, 0
	for _, c := range b {
		switch {
		case c == ':':
			colons++
			group = 0
		case isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f':
			group++
		default:
			return false
		}
		if group > 4 {
			return false
		}
	}
	return colons < 7
}

// parseTag reads the TAG at msg[i:] into ev.App and ev.ProcID (see
// parse3164) and returns the index of the message.
func parseTag(msg []byte, i int, ev *Event) int {
	j := i
	for j < len(msg) && (!stop3164[msg[j]] || msg[j] == ']') {
		j++
	}
	app := msg[i:j:j]
	if j < len(msg) && msg[j] == '[' {
		open, closed := j, -1
		for j++; j < len(msg) && msg[j] != ' ' && msg[j] != ':'; j++ {
			if msg[j] == ']' && closed < 0 {
				closed = j
			}
		}
		if closed > open+1 {
			ev.ProcID = msg[open+1 : closed : closed]
		}
	}
	if len(app) > 0 {
		ev.App = app
	}
	if j < len(msg) && msg[j] == ':' {
		j++
	}
	if j < len(msg) && msg[j] == ' ' {
		j++
	}
	return j
}

// monthIndex returns 1..12 for "Jan".."Dec" at the start of b, or 0.
func monthIndex(b []byte) int {
	if len(b) < 3 {
		return 0
	}
	switch string(b[:3]) {
	case "Jan":
		return 1
	case "Feb":
		return 2
	case "Mar":
		return 3
	case "Apr":
		return 4
	case "May":
		return 5
	case "Jun":
		return 6
	case "Jul":
		return 7
	case "Aug":
		return 8
	case "Sep":
		return 9
	case "Oct":
		return 10
	case "Nov":
		return 11
	case "Dec":
		return 12
	}
	return 0
}

// stamp3164 is a scanned RFC 3164 timestamp; year is 0 when it has none.
type stamp3164 struct {
	year, mon, day, hh, mm, ss, ns int
}

// scan3164 scans "Mmm dd [yyyy ]hh:mm:ss[.fraction]" at the start of b,
// the day space-padded ("Jan  5"), zero-padded or a single digit
// ("Jan 5", which rsyslog takes and syslog-ng does not). It returns the
// stamp and its length, or length 0. Field ranges are not checked.
func scan3164(b []byte) (st stamp3164, n int) {
	if len(b) < 14 || b[3] != ' ' {
		return st, 0
	}
	if st.mon = monthIndex(b); st.mon == 0 {
		return st, 0
	}
	n = 4
	if b[n] == ' ' {
		n++
	}
	switch {
	case isDigit(b[n]) && isDigit(b[n+1]):
		st.day = num2(b[n])*10 + num2(b[n+1])
		n += 2
	case isDigit(b[n]):
		st.day = num2(b[n])
		n++
	default:
		return st, 0
	}
	if b[n] != ' ' {
		return st, 0
	}
	n++
	if len(b)-n >= 13 && isDigit(b[n]) && isDigit(b[n+1]) && isDigit(b[n+2]) && isDigit(b[n+3]) && b[n+4] == ' ' {
		st.year = num2(b[n])*1000 + num2(b[n+1])*100 + num2(b[n+2])*10 + num2(b[n+3])
		n += 5
	}
	if len(b)-n < 8 {
		return st, 0
	}
	t := b[n : n+8]
	if !isDigit(t[0]) || !isDigit(t[1]) || t[2] != ':' || !isDigit(t[3]) || !isDigit(t[4]) ||
		t[5] != ':' || !isDigit(t[6]) || !isDigit(t[7]) {
		return st, 0
	}
	st.hh, st.mm, st.ss = num2(t[0])*10+num2(t[1]), num2(t[3])*10+num2(t[4]), num2(t[6])*10+num2(t[7])
	n += 8
	if n < len(b) && b[n] == '.' {
		k := n + 1
		for k < len(b) && isDigit(b[k]) {
			k++
		}
		if k > n+1 {
			st.ns = fracNanos(b[n:k])
			n = k
		}
	}
	return st, n
}

// ts3164Len returns the length of a leading RFC 3164 timestamp (see
// scan3164) or RFC 3339 timestamp, and the index after it and an optional
// ':' (rsyslog skips one after "hh:mm:ss", as Cisco devices send it). The
// timestamp must be followed by SP or the end of b; otherwise n is 0.
func ts3164Len(b []byte) (n, next int) {
	switch {
	case len(b) >= 19 && isDigit(b[0]) && isDigit(b[1]) && isDigit(b[2]) && isDigit(b[3]) &&
		b[4] == '-' && isDigit(b[5]) && isDigit(b[6]) && b[7] == '-' && isDigit(b[8]) && isDigit(b[9]) &&
		(b[10] == 'T' || b[10] == 't'):
		n = 11
		for n < len(b) && b[n] != ' ' {
			n++
		}
		next = n
	default:
		if _, n = scan3164(b); n == 0 {
			return 0, 0
		}
		next = n
		if next < len(b) && b[next] == ':' {
			next++
		}
	}
	if next < len(b) && b[next] != ' ' {
		return 0, 0
	}
	return n, next
}
