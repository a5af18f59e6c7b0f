package syslog

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// parsed is one program's parse of one event. An empty string is an absent
// field: rsyslog writes "-" and syslog-ng an empty value for those.
type parsed struct {
	host, app, procid, msgid, msg string
	time                          time.Time
	fac, sev                      int
	tag                           string   // the sender's TAG as it forwards it (rsyslog's syslogtag), if known
	raw                           string   // the bytes the parse came from, if known
	version                       string   // rsyslog's protocol-version: 0 for RFC 3164
	tags                          []string // enrichd's tags (_malformed, _truncated)
}

var seqRE = regexp.MustCompile(`seq=(\d{6})`)

// seq is the event's sequence number, from its message.
func (p *parsed) seq() string {
	m := seqRE.FindStringSubmatch(p.msg)
	if m == nil {
		// A misparsed header can leave the number in the app name.
		if m = seqRE.FindStringSubmatch(p.app + " " + p.raw); m == nil {
			return ""
		}
	}
	return m[1]
}

// wire describes a forwarding format by what of the sender's parse it can
// carry. What a format cannot carry is compared as the format carries it;
// each such rule is a property of the format, written here and in
// docs/interop.md, and never a tolerance for enrichd.
type wire struct {
	name string
	// zoneless: the timestamp is RFC 3164's "Mmm dd hh:mm:ss", without zone
	// or year, written in the sender's own wall clock (the offset the
	// event's timestamp had). enrichd reads it in its local zone, UTC here
	// (every program of the tests runs with TZ=UTC), and infers the year.
	zoneless bool
	// precision of the timestamp on the wire (enrichd writes milliseconds,
	// so never finer than that).
	precision time.Duration
	// noMsgID: RFC 3164 formats have no MSGID field.
	noMsgID bool
	// tag32: rsyslog's forwarding formats send at most 32 bytes of the TAG
	// (RFC 3164 4.1.3); a longer one is cut, and with it the app name or
	// the [PROCID].
	tag32 bool
	// sepSP: rsyslog's MSG of an RFC 3164 event keeps the space after the
	// TAG. Forwarded as "TAG MSG" that space becomes the separator, which
	// enrichd's message, like syslog-ng's, does not include.
	sepSP bool
}

// expect returns what enrichd must report for an event its sender parsed
// as s and forwarded in format w, and a note naming the format's loss when
// one changed the expectation of an identity field (app, procid).
func expect(s parsed, w wire) (parsed, string) {
	e := s
	note := ""
	if w.zoneless {
		wall := s.time
		e.time = time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	}
	e.time = e.time.Truncate(w.precision)
	if w.noMsgID {
		e.msgid = ""
	}
	if w.sepSP && strings.HasPrefix(e.msg, " ") {
		e.msg = e.msg[1:]
	}
	if w.tag32 && len(s.tag) > 32 {
		e.app, e.procid = tagFields(s.tag[:32])
		if e.app != s.app || e.procid != s.procid {
			note = "TAG cut to 32 bytes by the forwarding format"
		}
	}
	return e, note
}

// tagFields splits an RFC 3164 TAG as rsyslog and syslog-ng do: the app
// name runs to '[' or ':', the PROCID is between '[' and a closing ']'.
func tagFields(tag string) (app, procid string) {
	tag, _, _ = strings.Cut(tag, ":")
	app, rest, ok := strings.Cut(tag, "[")
	if ok {
		if p, _, closed := strings.Cut(rest, "]"); closed {
			procid = p
		}
	}
	return app, procid
}

// mismatch is one field of one event that differs.
type mismatch struct {
	seq, field, want, got, raw string
}

// compareForwarded checks that got (enrichd's output for the events
// forwarded in format w) holds every event of sent exactly once, each
// with the fields expect derives from the sender's parse. sent maps the
// sequence number to the sender's parse.
func compareForwarded(t *testing.T, w wire, sent map[string]parsed, got []parsed) {
	t.Helper()
	seen := map[string]int{}
	var bad []mismatch
	notes := map[string]int{}
	fieldCount := map[string]int{}
	for _, g := range got {
		seq := g.seq()
		seen[seq]++
		s, ok := sent[seq]
		if !ok {
			bad = append(bad, mismatch{seq: seq, field: "event", want: "(not sent)", got: g.msg, raw: g.raw})
			fieldCount["event"]++
			continue
		}
		if seen[seq] > 1 {
			continue
		}
		e, note := expect(s, w)
		if note != "" {
			notes[note]++
		}
		for _, f := range []struct{ name, want, got string }{
			{"host", e.host, g.host},
			{"app", e.app, g.app},
			{"procid", e.procid, g.procid},
			{"msgid", e.msgid, g.msgid},
			{"message", e.msg, g.msg},
			{"timestamp", e.time.UTC().Format(time.RFC3339Nano), g.time.UTC().Format(time.RFC3339Nano)},
			{"facility", fmt.Sprint(e.fac), fmt.Sprint(g.fac)},
			{"severity", fmt.Sprint(e.sev), fmt.Sprint(g.sev)},
			{"tags", "", strings.Join(g.tags, ",")},
		} {
			if f.want != f.got {
				bad = append(bad, mismatch{seq, f.name, f.want, f.got, g.raw})
				fieldCount[f.name]++
			}
		}
	}
	var missing, dup []string
	for seq := range sent {
		switch seen[seq] {
		case 0:
			missing = append(missing, seq)
		case 1:
		default:
			dup = append(dup, seq)
		}
	}
	sort.Strings(missing)
	sort.Strings(dup)
	for note, n := range notes {
		t.Logf("%s: %d events: %s (expected from the format, see wire)", w.name, n, note)
	}
	if len(missing) > 0 || len(dup) > 0 {
		t.Errorf("%s: %d events sent, %d lines out; %d never arrived (first: %.10q), %d arrived more than once (first: %.10q)",
			w.name, len(sent), len(got), len(missing), missing, len(dup), dup)
	}
	if len(bad) == 0 {
		t.Logf("%s: %d events, every one once, every field as the sender has it", w.name, len(sent))
		return
	}
	byEvent := map[string]bool{}
	for _, m := range bad {
		byEvent[m.seq] = true
	}
	var fields []string
	for f, n := range fieldCount {
		fields = append(fields, fmt.Sprintf("%s %d", f, n))
	}
	sort.Strings(fields)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d events differ from the sender's parse (fields: %s); first ones:", w.name, len(byEvent), len(sent), strings.Join(fields, ", "))
	shown := map[string]int{}
	for _, m := range bad {
		if shown[m.field] >= 4 {
			continue
		}
		shown[m.field]++
		fmt.Fprintf(&b, "\n  seq %s %s: sender %.120q, enrichd %.120q\n    received: %.200q", m.seq, m.field, m.want, m.got, m.raw)
	}
	t.Error(b.String())
}
