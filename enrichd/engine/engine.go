package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader/mmdb"
	"github.com/lutkit/lutkit/tables"
)

// Format is how the messages of a batch are read.
type Format uint8

// Formats.
const (
	Syslog Format = iota // RFC 5424 and RFC 3164 (a line without a PRI is tagged _malformed)
	JSON                 // one JSON object per message; an invalid one is read as Raw, tagged _jsonparsefailure
	Raw                  // the message as it is
)

// FlagTruncated marks a message its input cut at the size limit; its
// event is tagged _truncated.
const FlagTruncated uint8 = 1

// System tags.
const (
	tagMalformed uint8 = 1 << iota
	tagTruncated
	tagJSONFailure
	tagNoTable
)

var systemTags = []string{"_malformed", "_truncated", "_jsonparsefailure", "_table_missing"}

// Rule is one enrichment rule: look an event's field (or fields) up in a
// table and write what is found under Target.
type Rule struct {
	Name   string
	Table  string
	Fields []string // one source field, or several for a composite key
	Target string   // dotted output path of the rule's object
	// Columns to keep (.lut): nil means every column, under its own name.
	Columns []Rename
	// MMDBFields: record path -> output name, in order.
	MMDBFields []Rename
	MMDB       bool // the rule reads an .mmdb table
	MissTag    string
	Defaults   []Rename // output name -> value on a miss
	// When, if set, is the condition under which the rule runs: an
	// event it does not hold for is not looked up and gets nothing of
	// the rule (no defaults, no miss tag).
	When *Cond
	// Each looks every element of an array field up and writes Target
	// as an array of the results, in order (each_lookup.go).
	Each bool
	// At is the event time the rule's lookups are made at (EventTime
	// syntax); "" takes Options.EventTime.
	At string
	// MaxMatches, above 1, writes Target as an array of up to that many
	// matching rows, the most specific first (multi_lookup.go).
	MaxMatches int
}

// Rename maps a source name (column or record path) to an output name.
type Rename struct{ From, To string }

// KVMode says which key=value pairs of a message are written out as
// top-level members.
type KVMode uint8

// Key=value modes.
const (
	KVUsed KVMode = iota // the pairs the rules read
	KVAll
	KVNone
)

// Options shape every event's output beyond the rules.
type Options struct {
	KV             KVMode
	Original       bool // write event.original, the raw message
	StructuredData bool // write log.syslog.structured_data
	TLSClient      bool // write tls.client.subject, when the batch has one
	// Split records where each event's line ends in the output (Lines.Line),
	// for outputs that send events one by one.
	Split bool
	// EventFields are event fields (as a rule's field names them) whose
	// values are recorded for each event (Lines.Field), for outputs that
	// route or key events by a field. They imply Split.
	EventFields []string
	// EventTime is where an event's time is read for the lookups of
	// rules that have no At of their own (event_time.go): "" (none),
	// "syslog", "receive" or "json.PATH".
	EventTime string
}

// MaxRules is how many rules an Engine takes: an event's misses are one
// bit per rule.
const MaxRules = 64

// ruleStats are a rule's lookup counters.
type ruleStats struct {
	hits, misses, noTable, badKey atomic.Uint64
	skipped, timeMissing, timeBad atomic.Uint64
}

// RuleStats are a rule's lookup counters at one moment.
type RuleStats struct {
	Name, Table string
	MMDB        bool
	// Hits and Misses count lookups (an event without the field is a
	// miss); NoTable the events looked up while the table was not loaded;
	// BadKey, for .mmdb rules, the keys that are not IP addresses.
	Hits, Misses, NoTable, BadKey uint64
	// Skipped counts the events the rule's When did not hold for (not
	// looked up, not in Hits or Misses).
	Skipped uint64
	// TimeMissing and TimeBad count the lookups of a rule with an event
	// time made at the receive time instead, the event having no time
	// of that source or one that does not parse.
	TimeMissing, TimeBad uint64
}

// rule is a compiled Rule.
type rule struct {
	cfg      Rule
	handle   *tables.Handle
	fields   []fieldRef
	mmFields *mmdb.Fields
	missTag  []byte // pre-encoded, or nil
	stats    ruleStats
	when     *cond
	// chainCols are the columns (.lut) later rules read of this rule's
	// row; defs the raw defaults they read on a miss, by output name.
	chainCols []string
	defs      map[string][]byte
	each      *eachPlan // Each rules
	timeSrc   int       // index in Engine.timeSrcs, or -1
}

// Engine turns batches of raw messages into enriched JSON lines: rules
// compiled once, run against the snapshot of the table set a batch takes.
// It does no I/O; Workers (one per goroutine) do the work.
type Engine struct {
	set       *tables.Set
	cfgRules  []Rule
	rules     []*rule
	prog      []op        // the encoding program
	depth     int         // objects prog opens inside one another at most
	kvKeys    []string    // distinct key=value keys the rules read
	kvKeyJSON []memberKey // `,"key":` of each of kvKeys
	kvSkip    []bool      // the key is a top-level output name: not written
	extractor *parse.Extractor
	topNames  map[string]bool
	topMask   uint64 // topBit of every name in topNames: most keys miss it
	kvMode    uint8  // 0 none, 1 used, 2 all
	tagJSON   [][]byte
	// perEvent is set by Options.Split: workers then record where each
	// line ends and the values of outFields (Options.EventFields, named
	// outNames).
	perEvent  bool
	outNames  []string
	outFields []fieldRef
	fused     fusedPlan // how prog is fused for an event's present members
	// missTags has bit i set when rule i has a miss tag: an event without
	// system tags and without a miss of those rules has no tags.
	missTags uint64
	// timeSrcs are the distinct event time sources the rules use.
	timeSrcs []timeSource
	// eachRules are the indexes of the Each rules.
	eachRules []int
}

// Check checks what rules make together with opts, without tables: the
// number of rules, the event fields they read, and an output object in
// which no two names collide.
func Check(rules []Rule, opts Options) error {
	if len(rules) > MaxRules {
		return fmt.Errorf("at most %d rules are supported, got %d", MaxRules, len(rules))
	}
	for i, r := range rules {
		for _, f := range r.Fields {
			if _, err := checkRuleField(rules, i, f); err != nil {
				return fmt.Errorf("rule %q: %w", r.Name, err)
			}
		}
		if r.When != nil {
			if err := r.When.check(rules, i); err != nil {
				return fmt.Errorf("rule %q: when: %w", r.Name, err)
			}
		}
		if err := checkEach(&r); err != nil {
			return fmt.Errorf("rule %q: %w", r.Name, err)
		}
		if err := CheckMaxMatches(&r); err != nil {
			return fmt.Errorf("rule %q: max_matches: %w", r.Name, err)
		}
		if _, err := parseTimeSource(r.At); err != nil {
			return fmt.Errorf("rule %q: at: %w", r.Name, err)
		}
		if err := CheckOutputName(r.Target); err != nil {
			return fmt.Errorf("rule %q: target: %w", r.Name, err)
		}
		for _, m := range append(r.MMDBFields, r.Columns...) {
			if err := CheckOutputName(m.To); err != nil {
				return fmt.Errorf("rule %q: %w", r.Name, err)
			}
		}
	}
	if _, err := parseTimeSource(opts.EventTime); err != nil {
		return fmt.Errorf("event_time: %w", err)
	}
	_, err := buildTree(rules, opts)
	return err
}

// CheckOutputName checks a dotted output name (a rule's target, an
// output name of its columns or MMDB fields).
func CheckOutputName(s string) error {
	if s == "" {
		return fmt.Errorf("empty output name")
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return fmt.Errorf("%q has an empty segment", s)
		}
	}
	return nil
}

// New compiles rules against the live set (nil: no tables; every rule
// then misses).
func New(rules []Rule, opts Options, set *tables.Set) (*Engine, error) {
	if err := Check(rules, opts); err != nil {
		return nil, err
	}
	tree, err := buildTree(rules, opts)
	if err != nil {
		return nil, err
	}
	p := &Engine{set: set, topNames: map[string]bool{}, cfgRules: rules}
	p.prog, p.depth = compileTree(tree)
	for _, c := range tree.children {
		if c.name != "" {
			p.topNames[c.name] = true
		}
	}
	p.topNames["tags"] = true
	for name := range p.topNames {
		p.topMask |= topBit(name)
	}
	switch opts.KV {
	case KVAll:
		p.kvMode = 2
	case KVNone:
		p.kvMode = 0
	default:
		p.kvMode = 1
	}
	for _, t := range systemTags {
		p.tagJSON = append(p.tagJSON, jsonstr.AppendStringS(nil, t))
	}
	kvIndex := map[string]int{}
	for ri, rc := range rules {
		r := &rule{cfg: rc, timeSrc: -1}
		if set != nil {
			r.handle = set.Table(rc.Table)
		}
		if rc.MissTag != "" {
			r.missTag = jsonstr.AppendStringS(nil, rc.MissTag)
			p.missTags |= 1 << len(p.rules)
		}
		for _, f := range rc.Fields {
			fr, err := p.ruleFieldRef(ri, f, kvIndex)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", rc.Name, err)
			}
			r.fields = append(r.fields, fr)
		}
		if rc.When != nil {
			if r.when, err = p.compileCond(ri, rc.When, kvIndex); err != nil {
				return nil, fmt.Errorf("rule %q: when: %w", rc.Name, err)
			}
		}
		if len(rc.Defaults) > 0 {
			r.defs = map[string][]byte{}
			for _, d := range rc.Defaults {
				r.defs[d.From] = []byte(d.To)
			}
		}
		if r.timeSrc, err = p.addTimeSource(rc.At, opts.EventTime, kvIndex); err != nil {
			return nil, fmt.Errorf("rule %q: at: %w", rc.Name, err)
		}
		if rc.MMDB {
			paths := make([]string, len(rc.MMDBFields))
			for j, f := range rc.MMDBFields {
				paths[j] = f.From
			}
			if r.mmFields, err = mmdb.CompileFields(paths...); err != nil {
				return nil, fmt.Errorf("rule %q: mmdb_fields: %w", rc.Name, err)
			}
		}
		if rc.Each {
			r.each = newEachPlan(&rc)
			p.eachRules = append(p.eachRules, ri)
		}
		if rc.MaxMatches > 1 {
			r.each = newMultiPlan(&rc)
			p.eachRules = append(p.eachRules, ri)
		}
		p.rules = append(p.rules, r)
	}
	p.perEvent = opts.Split || len(opts.EventFields) > 0
	for _, f := range opts.EventFields {
		if f == "" || slices.Contains(p.outNames, f) {
			continue
		}
		fr, err := p.fieldRef(f, kvIndex)
		if err != nil {
			return nil, err
		}
		p.outNames = append(p.outNames, f)
		p.outFields = append(p.outFields, fr)
	}
	p.extractor = parse.NewExtractor(p.kvKeys)
	for _, k := range p.kvKeys {
		p.kvSkip = append(p.kvSkip, p.topNames[k])
	}
	p.planFused()
	return p, nil
}

// Stats returns every rule's lookup counters, in rule order.
func (p *Engine) Stats() []RuleStats {
	out := make([]RuleStats, len(p.rules))
	for i, r := range p.rules {
		out[i] = RuleStats{
			Name: r.cfg.Name, Table: r.cfg.Table, MMDB: r.mmFields != nil,
			Hits: r.stats.hits.Load(), Misses: r.stats.misses.Load(), NoTable: r.stats.noTable.Load(), BadKey: r.stats.badKey.Load(),
			Skipped: r.stats.skipped.Load(), TimeMissing: r.stats.timeMissing.Load(), TimeBad: r.stats.timeBad.Load(),
		}
	}
	return out
}

// topBit is a name's bit in Engine.topMask: a key whose bit is clear is
// no top-level output name, without a map lookup.
func topBit[T string | []byte](name T) uint64 {
	if len(name) == 0 {
		return 0
	}
	return 1 << ((uint(len(name))<<2 ^ uint(name[0]) ^ uint(name[len(name)-1])<<1) & 63)
}
