package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/reader"
)

// Event time: the time a rule's lookups are made at, for tables whose
// rows are valid from one time to another. It is read once per event
// and source, only when a rule has a source (Options.EventTime or its
// At), before the rules run. An event without a time of its source, or
// with one that does not parse, is looked up at the receive time (the
// now of Process), counted in the rule's TimeMissing or TimeBad.

// timeKind is where an event time is read.
type timeKind uint8

const (
	tkNone    timeKind = iota
	tkSyslog           // the syslog header's TIMESTAMP
	tkReceive          // the now of Process
	tkJSON             // a JSON member (json.PATH): RFC 3339 or epoch
)

// timeSource is one source of event times.
type timeSource struct {
	kind timeKind
	path []byte // tkJSON
}

// parseTimeSource parses an event time source: "" (none), "syslog",
// "receive" or "json.PATH".
func parseTimeSource(s string) (timeSource, error) {
	switch s {
	case "":
		return timeSource{}, nil
	case "syslog":
		return timeSource{kind: tkSyslog}, nil
	case "receive":
		return timeSource{kind: tkReceive}, nil
	}
	if p, ok := strings.CutPrefix(s, "json."); ok && p != "" {
		return timeSource{kind: tkJSON, path: []byte(p)}, nil
	}
	return timeSource{}, fmt.Errorf("%q: want syslog, receive or json.PATH", s)
}

// CheckEventTime checks an event time source (Options.EventTime,
// Rule.At).
func CheckEventTime(s string) error {
	_, err := parseTimeSource(s)
	return err
}

// addTimeSource returns the index in p.timeSrcs of the source at (or def
// when at is ""), adding it; -1 for none.
func (p *Engine) addTimeSource(at, def string, _ map[string]int) (int, error) {
	if at == "" {
		at = def
	}
	ts, err := parseTimeSource(at)
	if err != nil || ts.kind == tkNone {
		return -1, err
	}
	for k, o := range p.timeSrcs {
		if o.kind == ts.kind && string(o.path) == string(ts.path) {
			return k, nil
		}
	}
	p.timeSrcs = append(p.timeSrcs, ts)
	return len(p.timeSrcs) - 1, nil
}

// readTimes reads the event times of evs, for every source, into
// w.times and w.timeSt (source k of event i at k*len(w.evs)+i).
func (w *Worker) readTimes(evs []evState, now time.Time) {
	n := len(w.evs)
	recv := now.UnixNano()
	for k, ts := range w.p.timeSrcs {
		times, st := w.times[k*n:k*n+len(evs)], w.timeSt[k*n:k*n+len(evs)]
		for i := range evs {
			e := &evs[i]
			var t int64
			s := parse.TimeMissing
			switch ts.kind {
			case tkReceive:
				t, s = recv, parse.TimeOK
			case tkSyslog:
				if e.kind == Syslog {
					t, s = parse.SyslogTime(&e.ev, now)
				}
			case tkJSON:
				if v, kind, ok := parse.JSONField(e.body, ts.path); ok {
					t, s = parse.ParseEventTime(v, kind)
				}
			}
			if s != parse.TimeOK {
				t = recv
			}
			times[i], st[i] = t, s
		}
	}
}

// countTimes adds, to rule r's chunk counts, the events looked up at the
// receive time for want of their own.
func (w *Worker) countTimes(r *rule, rw *ruleWork, n int) {
	st := w.timeSt[r.timeSrc*len(w.evs) : r.timeSrc*len(w.evs)+n]
	for i, s := range st {
		if s == parse.TimeOK || rw.keys[i] == nil {
			continue
		}
		if s == parse.TimeMissing {
			rw.nTimeMissing++
		} else {
			rw.nTimeBad++
		}
	}
}

// Matcher is what a table implements to answer a key at a time: the
// row of key valid at Unix second at. A time-bounded .lut table
// (reader.Table.TimeBounded: rows with valid_from/valid_to) is one; a rule
// with an event time looks it up one key at a time at each event's time.
// Other tables are looked up by key alone, in one batch, and the event
// time is not used.
type Matcher interface {
	LookupAt(key []byte, at int64) (reader.View, bool)
}

// matcher returns t as a Matcher when rule r looks it up at event times
// and t answers such lookups.
func (w *Worker) matcher(r *rule, t *reader.Table) (Matcher, bool) {
	if r.timeSrc < 0 || !t.TimeBounded() {
		return nil, false
	}
	return t, true
}

// matchAt looks keys up in m at the events' times (times[i], Unix
// nanoseconds, taken down to the second a table's validity is in),
// setting views[i] to the row or to the zero View.
func matchAt(m Matcher, keys [][]byte, times []int64, views []reader.View) {
	for i, k := range keys {
		views[i] = reader.View{}
		if k == nil {
			continue
		}
		sec := times[i] / 1e9
		if times[i]%1e9 < 0 {
			sec-- // before 1970: down, not toward zero
		}
		views[i], _ = m.LookupAt(k, sec)
	}
}
