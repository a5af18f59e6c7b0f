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
}

// MaxRules is how many rules an Engine takes: an event's misses are one
// bit per rule.
const MaxRules = 64

// ruleStats are a rule's lookup counters.
type ruleStats struct {
	hits, misses, noTable, badKey atomic.Uint64
}

// RuleStats are a rule's lookup counters at one moment.
type RuleStats struct {
	Name, Table string
	MMDB        bool
	// Hits and Misses count lookups (an event without the field is a
	// miss); NoTable the events looked up while the table was not loaded;
	// BadKey, for .mmdb rules, the keys that are not IP addresses.
	Hits, Misses, NoTable, BadKey uint64
}

// rule is a compiled Rule.
type rule struct {
	cfg      Rule
	handle   *tables.Handle
	fields   []fieldRef
	mmFields *mmdb.Fields
	missTag  []byte // pre-encoded, or nil
	stats    ruleStats
}

// Engine turns batches of raw messages into enriched JSON lines: rules
// compiled once, run against the snapshot of the table set a batch takes.
// It does no I/O; Workers (one per goroutine) do the work.
type Engine struct {
	set       *tables.Set
	rules     []*rule
	prog      []op        // the encoding program
	depth     int         // objects prog opens inside one another at most
	kvKeys    []string    // distinct key=value keys the rules read
	kvKeyJSON []memberKey // `,"key":` of each of kvKeys
	kvSkip    []bool      // the key is a top-level output name: not written
	extractor *parse.Extractor
	topNames  map[string]bool
	kvMode    uint8 // 0 none, 1 used, 2 all
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
}

// Check checks what rules make together with opts, without tables: the
// number of rules, the event fields they read, and an output object in
// which no two names collide.
func Check(rules []Rule, opts Options) error {
	if len(rules) > MaxRules {
		return fmt.Errorf("at most %d rules are supported, got %d", MaxRules, len(rules))
	}
	for _, r := range rules {
		for _, f := range r.Fields {
			if _, err := parseFieldRef(f); err != nil {
				return fmt.Errorf("rule %q: %w", r.Name, err)
			}
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
	p := &Engine{set: set, topNames: map[string]bool{}}
	p.prog, p.depth = compileTree(tree)
	for _, c := range tree.children {
		if c.name != "" {
			p.topNames[c.name] = true
		}
	}
	p.topNames["tags"] = true
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
	for _, rc := range rules {
		r := &rule{cfg: rc}
		if set != nil {
			r.handle = set.Table(rc.Table)
		}
		if rc.MissTag != "" {
			r.missTag = jsonstr.AppendStringS(nil, rc.MissTag)
			p.missTags |= 1 << len(p.rules)
		}
		for _, f := range rc.Fields {
			fr, err := p.fieldRef(f, kvIndex)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", rc.Name, err)
			}
			r.fields = append(r.fields, fr)
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
		}
	}
	return out
}
