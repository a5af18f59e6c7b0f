package serve

import (
	"strconv"
	"strings"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/reader"
)

// Several matches
//
// A table of a match kind other than exact (a suffix, range or
// time-bounded table) can have several rows that match one key. The
// max_matches query parameter (default 1) of a GET or a _batch asks for
// up to that many: the answer for a key is then a JSON array of its rows,
// the most specific first (the reader's Match order: the longest suffix
// first; the narrowest range first, or source order, as the table's
// --overlap says). A key that matches nothing is answered as without the
// parameter (404 for a GET, null in a _batch). max_matches=1, like no
// parameter, answers the row itself; any larger value answers an array,
// whatever the table: an exact table's array holds its one row, so that
// a client's answers keep their shape when a table is compiled again
// with another kind. An .mmdb table answers one network, as an array of
// one.
//
// The at parameter (RFC 3339 or epoch seconds) looks time-bounded tables
// up at that time instead of the current one (reader.Table.LookupAt and
// MatchAt); other tables ignore it.

// MaxMatchesLimit is the largest max_matches a request may ask for.
const MaxMatchesLimit = 1000

// queryParam returns the value of the first query parameter name (raw,
// as the URL has it), or "": none, or the first has no value ("name" or
// "name="), as net/url reads a query.
func queryParam(q, name string) string {
	for q != "" {
		var kv string
		kv, q, _ = cutByte(q, '&')
		if kv == name {
			return "" // the first one has no value, as net/url reads it
		}
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return kv[len(name)+1:]
		}
	}
	return ""
}

func cutByte(s string, c byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// queryMaxMatches returns the max_matches parameter: 1 when absent, an
// error message for a value that is not an integer from 1 to
// MaxMatchesLimit.
func queryMaxMatches(q string) (int, string) {
	v := queryParam(q, "max_matches")
	if v == "" {
		return 1, ""
	}
	if strings.ContainsAny(v, "%+") {
		if u, err := unescapeQuery(v); err == nil {
			v = u
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxMatchesLimit {
		return 0, "max_matches must be an integer from 1 to " + strconv.Itoa(MaxMatchesLimit)
	}
	return n, ""
}

// lookupQuery is what a request's query asks of its lookups: up to max
// rows, at the time at (Unix seconds) when timed.
type lookupQuery struct {
	max   int
	at    int64
	timed bool
}

// queryAt returns the at parameter: the time a time-bounded table is
// looked up at, RFC 3339 or epoch seconds (absent: the current time); an
// error message for a value that is neither.
func queryAt(q string) (at int64, timed bool, msg string) {
	v := queryParam(q, "at")
	if v == "" {
		return 0, false, ""
	}
	if strings.ContainsAny(v, "%+") {
		if u, err := unescapeQuery(v); err == nil {
			v = u
		}
	}
	if isEpoch(v) { // ParseInt's error would allocate: test first
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, true, ""
		}
		return 0, false, "at must be an RFC 3339 time or epoch seconds"
	}
	// enrichd's reading of event times: RFC 3339, any offset and
	// fraction, without allocating (years 1678 to 2261).
	ns, st := parse.ParseEventTime(sbytes(v), parse.KindString)
	if st != parse.TimeOK {
		return 0, false, "at must be an RFC 3339 time or epoch seconds"
	}
	sec := ns / 1e9
	if ns%1e9 < 0 {
		sec-- // before 1970: down, not toward zero
	}
	return sec, true, ""
}

// isEpoch reports whether v is an optional sign and digits.
func isEpoch(v string) bool {
	if v != "" && (v[0] == '-' || v[0] == '+') {
		v = v[1:]
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}

// lookup is t.Lookup, or LookupAt at the query's time.
func (lq lookupQuery) lookup(t *reader.Table, key []byte) (reader.View, bool) {
	if lq.timed {
		return t.LookupAt(key, lq.at)
	}
	return t.Lookup(key)
}

// match is t.Match, or MatchAt at the query's time.
func (lq lookupQuery) match(t *reader.Table, key []byte, out []reader.View) int {
	if lq.timed {
		return t.MatchAt(key, lq.at, out)
	}
	return t.Match(key, out)
}

// matchViews returns hb's views, with room for n.
func (hb *httpBuf) matchViews(n int) []reader.View {
	if cap(hb.views) < n {
		hb.views = make([]reader.View, n)
	}
	return hb.views[:n]
}

// appendMatches looks key up in t for up to len(views) rows (at the
// query's time) and appends them as a JSON array; it reports false
// (appending nothing) when none matches.
func appendMatches(dst []byte, t *reader.Table, key []byte, views []reader.View, lq lookupQuery) ([]byte, bool) {
	n := lq.match(t, key, views)
	if n == 0 {
		return dst, false
	}
	dst = append(dst, '[')
	for i, v := range views[:n] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRow(dst, t, v)
	}
	return append(dst, ']'), true
}
