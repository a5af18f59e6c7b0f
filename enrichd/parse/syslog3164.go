package parse

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
