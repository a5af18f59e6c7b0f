package enrichd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/prefetch"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
	"github.com/lutkit/lutkit/tables"
)

// Event formats of an input.
const (
	fmtSyslog uint8 = iota
	fmtJSON
	fmtRaw
)

func formatCode(s string) uint8 {
	switch s {
	case "json":
		return fmtJSON
	case "raw":
		return fmtRaw
	}
	return fmtSyslog
}

// Message flags set by inputs.
const (
	flagTruncated uint8 = 1 << iota
)

// System tags.
const (
	tagMalformed uint8 = 1 << iota
	tagTruncated
	tagJSONFailure
	tagNoTable
)

var systemTags = []string{"_malformed", "_truncated", "_jsonparsefailure", "_table_missing"}

// fieldKind is where a rule's source field is read from.
type fieldKind uint8

const (
	fkAuto fieldKind = iota // key=value pair, or JSON member for JSON events
	fkKV
	fkJSON
	fkSD
	fkHost
	fkApp
	fkProcID
	fkMsgID
	fkMessage
)

type fieldRef struct {
	kind   fieldKind
	name   []byte // kv key or JSON path
	sdID   []byte
	kvSlot int
}

// parseFieldRef parses a rule's source field: "kv.NAME", "json.PATH",
// "sd.ID.NAME", a syslog header field (host.name, log.syslog.appname,
// process.pid, log.syslog.msgid, message), or a bare NAME (a key=value
// pair, or the JSON member NAME for JSON input).
func parseFieldRef(s string) (fieldRef, error) {
	switch s {
	case "":
		return fieldRef{}, fmt.Errorf("empty field name")
	case "host.name", "host":
		return fieldRef{kind: fkHost}, nil
	case "log.syslog.appname", "appname":
		return fieldRef{kind: fkApp}, nil
	case "process.pid", "log.syslog.procid":
		return fieldRef{kind: fkProcID}, nil
	case "log.syslog.msgid":
		return fieldRef{kind: fkMsgID}, nil
	case "message":
		return fieldRef{kind: fkMessage}, nil
	}
	switch {
	case strings.HasPrefix(s, "kv."):
		if len(s) == 3 {
			return fieldRef{}, fmt.Errorf("field %q: empty key", s)
		}
		return fieldRef{kind: fkKV, name: []byte(s[3:])}, nil
	case strings.HasPrefix(s, "json."):
		if len(s) == 5 {
			return fieldRef{}, fmt.Errorf("field %q: empty path", s)
		}
		return fieldRef{kind: fkJSON, name: []byte(s[5:])}, nil
	case strings.HasPrefix(s, "sd."):
		rest := s[3:]
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 || i == len(rest)-1 {
			return fieldRef{}, fmt.Errorf("field %q: want sd.SD-ID.PARAM-NAME", s)
		}
		return fieldRef{kind: fkSD, sdID: []byte(rest[:i]), name: []byte(rest[i+1:])}, nil
	}
	return fieldRef{kind: fkAuto, name: []byte(s)}, nil
}

// ruleStats are a rule's lookup counters.
type ruleStats struct {
	hits, misses, noTable, badKey atomic.Uint64
}

// rule is a compiled RuleConfig.
type rule struct {
	cfg      RuleConfig
	handle   *tables.Handle
	fields   []fieldRef
	mmFields *mmdb.Fields
	missTag  []byte // pre-encoded, or nil
	stats    ruleStats
}

// Pipeline turns batches of raw messages into batches of enriched JSON
// lines. It holds no I/O; workers (one per goroutine) do the work.
type Pipeline struct {
	cfg       *Config
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
	// perEvent is set when an output sends each event on its own (Kafka):
	// workers then record where each line ends and the values of
	// outFields (the outputs' key and topic fields, named outNames).
	perEvent  bool
	outNames  []string
	outFields []fieldRef
}

// NewPipeline compiles cfg's rules against the live set.
func NewPipeline(cfg *Config, set *tables.Set) (*Pipeline, error) {
	if len(cfg.Rules) > 64 {
		return nil, fmt.Errorf("at most 64 rules are supported, got %d", len(cfg.Rules))
	}
	tree, err := buildTree(cfg)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, set: set, topNames: map[string]bool{}}
	p.prog, p.depth = compileTree(tree)
	for _, c := range tree.children {
		if c.name != "" {
			p.topNames[c.name] = true
		}
	}
	p.topNames["tags"] = true
	switch cfg.Pipeline.KVFields {
	case "all":
		p.kvMode = 2
	case "none":
		p.kvMode = 0
	default:
		p.kvMode = 1
	}
	for _, t := range systemTags {
		p.tagJSON = append(p.tagJSON, parse.AppendStringS(nil, t))
	}
	kvIndex := map[string]int{}
	for _, rc := range cfg.Rules {
		r := &rule{cfg: rc}
		if set != nil {
			r.handle = set.Table(rc.Table)
		}
		if rc.MissTag != "" {
			r.missTag = parse.AppendStringS(nil, rc.MissTag)
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
	for _, o := range cfg.Outputs {
		if o.Type != "kafka" {
			continue
		}
		p.perEvent = true
		for _, f := range []string{o.Kafka.KeyField, o.Kafka.TopicField} {
			if f == "" || slices.Contains(p.outNames, f) {
				continue
			}
			fr, err := p.fieldRef(f, kvIndex)
			if err != nil {
				return nil, fmt.Errorf("output %s: %w", o.Name, err)
			}
			p.outNames = append(p.outNames, f)
			p.outFields = append(p.outFields, fr)
		}
	}
	p.extractor = parse.NewExtractor(p.kvKeys)
	for _, k := range p.kvKeys {
		p.kvSkip = append(p.kvSkip, p.topNames[k])
	}
	return p, nil
}

// fieldRef parses an event field name, giving key=value names a slot in
// the extractor (kvIndex maps the names seen so far to their slots).
func (p *Pipeline) fieldRef(f string, kvIndex map[string]int) (fieldRef, error) {
	fr, err := parseFieldRef(f)
	if err != nil {
		return fr, err
	}
	fr.kvSlot = -1
	if fr.kind == fkAuto || fr.kind == fkKV {
		k := string(fr.name)
		j, ok := kvIndex[k]
		if !ok {
			j = len(p.kvKeys)
			kvIndex[k] = j
			p.kvKeys = append(p.kvKeys, k)
			p.kvKeyJSON = append(p.kvKeyJSON, newMemberKey(parse.AppendKeyS([]byte{','}, k)))
		}
		fr.kvSlot = j
	}
	return fr, nil
}

// outField returns the index of an output's event field (key_field,
// topic_field) in outBuf.field, or -1 for "".
func (p *Pipeline) outField(name string) int {
	if name == "" {
		return -1
	}
	return slices.Index(p.outNames, name)
}

// msgRef locates one message in a batch's buffer.
type msgRef struct {
	off, n int32
	flags  uint8
}

// batch is a set of raw messages from one input, in one buffer.
type batch struct {
	buf    []byte
	msgs   []msgRef
	in     *inputStats
	format uint8
	start  time.Time // when the first message was added
	ack    *ackEntry // the input's acknowledgement (Kafka), or nil
}

func (b *batch) reset() {
	b.buf = b.buf[:0]
	b.msgs = b.msgs[:0]
	b.in = nil
	b.ack = nil
}

// add copies msg into the batch.
func (b *batch) add(msg []byte, flags uint8) {
	off := len(b.buf)
	b.buf = append(b.buf, msg...)
	b.msgs = append(b.msgs, msgRef{off: int32(off), n: int32(len(msg)), flags: flags})
}

// outBuf is a buffer of enriched JSON lines.
type outBuf struct {
	b      []byte
	events int
	// With Pipeline.perEvent: ends[i] is the end of line i in b (after its
	// '\n'), and the value of out field f for event i is
	// vals[spans[k-1]:spans[k]], k = i*len(outFields)+f (spans[-1] = 0).
	ends  []int32
	vals  []byte
	spans []int32
	// ack is the input's acknowledgement of the batch (Kafka inputs), done
	// when every output has taken the events.
	ack *ackEntry
	// refs counts the holders of b: the output loop and each output that
	// keeps it after Send (Kafka). The last one returns it to the pool.
	refs atomic.Int32
}

// field returns event i's value of out field f.
func (ob *outBuf) field(i, f, nf int) []byte {
	k := i*nf + f
	start := int32(0)
	if k > 0 {
		start = ob.spans[k-1]
	}
	return ob.vals[start:ob.spans[k]]
}

// line returns event i's JSON line, without its '\n'.
func (ob *outBuf) line(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = ob.ends[i-1]
	}
	return ob.b[start : ob.ends[i]-1]
}

// evState is one event of the batch being processed.
type evState struct {
	ev     parse.Event
	line   []byte
	body   []byte // where key=value and JSON fields are read
	kind   uint8  // fmtSyslog, fmtJSON, fmtRaw (a failed JSON line becomes raw)
	tags   uint8  // system tags
	misses uint64 // rule i missed (bit i)
}

// ruleWork is a worker's per-rule scratch.
type ruleWork struct {
	keys    [][]byte
	views   []reader.View
	hit     []bool
	mmVals  []mmdb.Value
	lut     *reader.Table
	mm      *mmdb.Reader
	colIdx  []int
	colFor  *reader.Table // table colIdx and rowKeys were resolved for
	colGen  uint64
	rowKeys []rowKey // what precedes each value of a whole row
	// keysRoom is the room the keys of a whole row take in appendRow:
	// each at least rowKeyPad bytes.
	keysRoom int
	ends     []int32  // scratch for a row's value ends
	vals     [][]byte // scratch for a row's values
	nf       int      // mmdb: fields per event in mmVals
	cache    ipCache
	// mmdb batch lookups: the addresses the cache did not answer, their
	// events, and the batch's values and matches.
	addrs     []netip.Addr
	idx       []int32
	batchVals []mmdb.Value
	matches   []mmdb.Match
}

// ipCacheSize is the number of networks an mmdb rule's cache holds per
// worker.
const ipCacheSize = 2048

// The cache measures its hit rate over ipCacheWindow addresses. A window
// with fewer than one hit in ipCacheMinRate turns it off for ipCacheRest
// addresses, after which it is tried again: checking the cache costs about
// a memory read, which many hits repay (logs repeat addresses) but which a
// stream of addresses that rarely repeat a network only adds to each
// lookup.
const (
	ipCacheWindow  = 16384
	ipCacheMinRate = 8
	ipCacheRest    = 16 * ipCacheWindow
)

type ipCacheEntry struct {
	prefix netip.Prefix
	idx    int
	valid  bool
	found  bool
}

// ipCache remembers recent mmdb matches by network. It is tied to one
// table set generation: the values alias the mapping, so the cache is
// cleared whenever the generation changes.
type ipCache struct {
	gen   uint64
	slots []ipCacheEntry
	vals  []mmdb.Value
	// the hit rate: addresses checked and answered in this window; while
	// the cache is off, rest counts down the addresses until it is tried
	// again.
	probes, hits, rest int
}

// on reports whether the batch about to be looked up uses the cache.
func (c *ipCache) on() bool { return c.rest <= 0 }

// account records a batch of n addresses, of which hits were answered by
// the cache (when it was on), and turns the cache off or on again.
func (c *ipCache) account(n, hits int) {
	if c.rest > 0 {
		c.rest -= n
		return
	}
	c.probes += n
	c.hits += hits
	if c.probes >= ipCacheWindow {
		if c.hits*ipCacheMinRate < c.probes {
			c.rest = ipCacheRest
		}
		c.probes, c.hits = 0, 0
	}
}

func (c *ipCache) reset(nf int, gen uint64) {
	if c.slots == nil {
		c.slots = make([]ipCacheEntry, ipCacheSize)
		c.vals = make([]mmdb.Value, ipCacheSize*nf)
		for i := range c.slots {
			c.slots[i].idx = i
		}
	}
	for i := range c.slots {
		c.slots[i].valid = false
	}
	clear(c.vals)
	c.gen = gen
}

// slot returns the entry for ip's /24 (IPv4) or /48 (IPv6).
func (c *ipCache) slot(ip netip.Addr) *ipCacheEntry {
	var h uint64
	if ip.Is4() {
		a := ip.As4()
		h = uint64(a[0])<<16 | uint64(a[1])<<8 | uint64(a[2])
	} else {
		a := ip.As16()
		h = binary.BigEndian.Uint64(a[:8]) >> 16
	}
	h *= 0x9E3779B97F4A7C15
	return &c.slots[h>>(64-11)]
}

// worker processes batches; one per goroutine.
type worker struct {
	p       *Pipeline
	evs     []evState
	kvVals  [][]byte
	rw      []ruleWork
	scratch []byte
	tmp     []byte
	now     time.Time
	frames  []frame // the objects encode has open
	snapGen uint64
	ob      *outBuf // the buffer being filled, when Pipeline.perEvent
}

func (p *Pipeline) newWorker(batchSize int) *worker {
	w := &worker{p: p, evs: make([]evState, batchSize), kvVals: make([][]byte, batchSize*max(1, len(p.kvKeys)))}
	w.rw = make([]ruleWork, len(p.rules))
	for i, r := range p.rules {
		rw := &w.rw[i]
		rw.keys = make([][]byte, batchSize)
		rw.views = make([]reader.View, batchSize)
		rw.hit = make([]bool, batchSize)
		if r.mmFields != nil {
			rw.mmVals = make([]mmdb.Value, batchSize*r.mmFields.Len())
			rw.batchVals = make([]mmdb.Value, batchSize*r.mmFields.Len())
			rw.addrs = make([]netip.Addr, 0, batchSize)
			rw.idx = make([]int32, 0, batchSize)
			rw.matches = make([]mmdb.Match, batchSize)
			rw.nf = r.mmFields.Len()
		}
		rw.colIdx = make([]int, len(r.cfg.Columns))
	}
	w.scratch = make([]byte, 0, 64<<10)
	w.frames = make([]frame, p.depth)
	return w
}

// process enriches the batch and appends one JSON line per message to
// out. It returns the extended buffer.
func (w *worker) process(b *batch, out []byte, now time.Time) []byte {
	for len(b.msgs) > 0 {
		n := min(len(b.msgs), len(w.evs))
		out = w.processChunk(b, b.msgs[:n], out, now)
		b.msgs = b.msgs[n:]
	}
	return out
}

func (w *worker) processChunk(b *batch, msgs []msgRef, out []byte, now time.Time) []byte {
	p := w.p
	w.now = now
	n := len(msgs)
	evs := w.evs[:n]
	var malformed, truncated uint64
	needKV := len(p.kvKeys) > 0
	nkv := len(p.kvKeys)
	// 1. Parse every event and extract its key=value pairs.
	for i, m := range msgs {
		e := &evs[i]
		e.line = b.buf[m.off : m.off+m.n : m.off+m.n]
		e.kind = b.format
		e.tags = 0
		e.misses = 0
		if m.flags&flagTruncated != 0 {
			e.tags |= tagTruncated
			truncated++
		}
		switch b.format {
		case fmtSyslog:
			parse.ParseSyslog(e.line, &e.ev)
			e.body = e.ev.Message
			if e.ev.Malformed {
				e.tags |= tagMalformed
				malformed++
			}
		case fmtJSON:
			e.ev.Reset()
			e.body = e.line
			if !validJSONObject(e.line) {
				e.kind = fmtRaw
				e.tags |= tagJSONFailure
				malformed++
			}
		default:
			e.ev.Reset()
			e.body = e.line
		}
		if needKV {
			vals := w.kvVals[i*nkv : (i+1)*nkv]
			if e.kind == fmtJSON {
				clear(vals)
			} else {
				p.extractor.Extract(e.body, vals)
			}
		}
	}
	if b.in != nil && (malformed|truncated) != 0 {
		b.in.malformed.Add(malformed)
		b.in.truncated.Add(truncated)
	}
	// 2. One snapshot of the table set for the whole batch; each rule is a
	// batch lookup.
	var snap *tables.Snapshot
	if p.set != nil {
		snap = p.set.Acquire()
		w.snapGen = snap.Generation()
	}
	w.scratch = w.scratch[:0]
	for ri, r := range p.rules {
		w.runRule(ri, r, snap, evs)
	}
	// 3. Encode. The rows found are fetched rowsAhead events ahead of
	// their encoding, so that their cache misses overlap instead of
	// stalling the encoder row by row (and not before the other rules'
	// lookups, or all at once, which would evict them again).
	for i := range evs {
		if i%rowsAhead == 0 {
			from := i + rowsAhead
			if i == 0 {
				from = 0
			}
			w.touchRows(from, min(i+2*rowsAhead, n))
		}
		out = w.encode(i, &evs[i], out)
		if ob := w.ob; ob != nil {
			ob.ends = append(ob.ends, int32(len(out)))
			for f := range p.outFields {
				ob.vals = append(ob.vals, w.fieldValue(i, &evs[i], &p.outFields[f])...)
				ob.spans = append(ob.spans, int32(len(ob.vals)))
			}
		}
	}
	if snap != nil {
		for i := range w.rw {
			w.rw[i].lut, w.rw[i].mm = nil, nil
		}
		snap.Release()
	}
	return out
}

// rowsAhead is how many events ahead of the encoder rows are fetched. Far
// enough for a row to arrive (an event takes longer to encode than a
// memory read), near enough that the output written meanwhile does not
// evict it again: in perf profiles of the peer benchmark's load, 4 spent
// the least in reading rows and prefetching them of 2, 4, 8, 16 and 48.
const rowsAhead = 4

// touchRows starts fetching the rows found for events from to to, and the
// bytes of the strings their MMDB fields hold.
func (w *worker) touchRows(from, to int) {
	if from >= to {
		return
	}
	for ri := range w.rw {
		rw := &w.rw[ri]
		switch {
		case rw.lut != nil:
			reader.TouchRows(rw.views[from:to])
		case rw.mm != nil:
			var pf prefetch.Batch
			for e := from; e < to; e++ {
				if !rw.hit[e] {
					continue // its values may be a previous batch's
				}
				for _, v := range rw.mmVals[e*rw.nf : (e+1)*rw.nf] {
					if b := v.Bytes(); len(b) > 0 {
						pf.Add(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
					}
				}
			}
			pf.Flush()
		}
	}
}

// validJSONObject reports whether line is one JSON object in valid UTF-8.
func validJSONObject(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}' && utf8.Valid(t) && json.Valid(t)
}

// fieldValue returns event e's value of f, or nil.
func (w *worker) fieldValue(i int, e *evState, f *fieldRef) []byte {
	switch f.kind {
	case fkAuto:
		if e.kind == fmtJSON {
			return w.jsonValue(e.body, f.name)
		}
		return w.kvVals[i*len(w.p.kvKeys)+f.kvSlot]
	case fkKV:
		if e.kind == fmtJSON {
			return nil
		}
		return w.kvVals[i*len(w.p.kvKeys)+f.kvSlot]
	case fkJSON:
		return w.jsonValue(e.body, f.name)
	case fkSD:
		var v []byte
		parse.EachSDParam(e.ev.StructuredData, func(id, name, value []byte) bool {
			if bytes.Equal(id, f.sdID) && bytes.Equal(name, f.name) {
				v = value
				return false
			}
			return true
		})
		if bytes.IndexByte(v, '\\') >= 0 {
			s := len(w.scratch)
			w.scratch = parse.AppendSDUnescape(w.scratch, v)
			v = w.scratch[s:len(w.scratch):len(w.scratch)]
		}
		return v
	case fkHost:
		return e.ev.Host
	case fkApp:
		return e.ev.App
	case fkProcID:
		return e.ev.ProcID
	case fkMsgID:
		return e.ev.MsgID
	case fkMessage:
		if e.kind == fmtSyslog {
			return e.ev.Message
		}
		return e.line
	}
	return nil
}

// jsonValue returns a JSON member's value as key bytes: strings unquoted,
// numbers and booleans as text; objects, arrays and null give nil.
func (w *worker) jsonValue(body, path []byte) []byte {
	v, kind, ok := parse.JSONField(body, path)
	if !ok {
		return nil
	}
	switch kind {
	case parse.KindString, parse.KindNumber, parse.KindBool:
		return v
	case parse.KindEscaped:
		s := len(w.scratch)
		w.scratch = parse.AppendUnquote(w.scratch, v)
		return w.scratch[s:len(w.scratch):len(w.scratch)]
	}
	return nil
}

func (w *worker) runRule(ri int, r *rule, snap *tables.Snapshot, evs []evState) {
	rw := &w.rw[ri]
	n := len(evs)
	keys := rw.keys[:n]
	for i := range evs {
		e := &evs[i]
		if len(r.fields) == 1 {
			keys[i] = w.fieldValue(i, e, &r.fields[0])
			continue
		}
		s := len(w.scratch)
		ok := true
		for j := range r.fields {
			v := w.fieldValue(i, e, &r.fields[j])
			if v == nil {
				ok = false
				break
			}
			if j > 0 {
				w.scratch = append(w.scratch, format.KeySeparator)
			}
			w.scratch = append(w.scratch, v...)
		}
		if !ok {
			w.scratch = w.scratch[:s]
			keys[i] = nil
			continue
		}
		keys[i] = w.scratch[s:len(w.scratch):len(w.scratch)]
	}
	hit := rw.hit[:n]
	clear(hit)
	var hits, badKey uint64
	if snap != nil {
		if r.mmFields != nil {
			rw.mm = r.handle.MMDB(snap)
		} else {
			rw.lut = r.handle.LUT(snap)
		}
	}
	switch {
	case rw.lut != nil:
		t := rw.lut
		if rw.colFor != t || rw.colGen != w.snapGen {
			// Resolved once per table version (a new version may have
			// other columns).
			for j, c := range r.cfg.Columns {
				rw.colIdx[j] = t.ColumnIndex(c.From)
			}
			rw.rowKeys, rw.keysRoom = rw.rowKeys[:0], 0
			for j, c := range t.Columns() {
				k := []byte(`",`)
				if j == 0 {
					k = []byte{'{'}
				}
				k = append(parse.AppendKeyS(k, c), '"')
				rw.rowKeys = append(rw.rowKeys, rowKey{b: k})
				copy(rw.rowKeys[j].pad[:], k)
				rw.keysRoom += max(len(k), rowKeyPad)
			}
			rw.vals = slices.Grow(rw.vals[:0], len(rw.rowKeys))
			rw.colFor, rw.colGen = t, w.snapGen
		}
		views := rw.views[:n]
		t.LookupBatch(keys, views)
		for i := range views {
			if keys[i] != nil && views[i].Len() > 0 {
				hit[i] = true
				hits++
			}
		}
	case rw.mm != nil:
		nf := r.mmFields.Len()
		c := &rw.cache
		if c.gen != w.snapGen || c.slots == nil {
			c.reset(nf, w.snapGen)
		}
		// Answer what the cache holds; look the rest up in one batch.
		useCache := c.on()
		addrs, idx := rw.addrs[:0], rw.idx[:0]
		cached := 0
		for i, k := range keys {
			if k == nil {
				continue
			}
			ip, ok := parseIP(k)
			if !ok {
				badKey++
				continue
			}
			if useCache {
				// Every address of a matched network gets the same record,
				// so a cached network that contains ip answers without a
				// lookup.
				if e := c.slot(ip); e.valid && e.prefix.Contains(ip) {
					copy(rw.mmVals[i*nf:(i+1)*nf], c.vals[e.idx*nf:(e.idx+1)*nf])
					cached++
					if e.found {
						hit[i] = true
						hits++
					}
					continue
				}
			}
			addrs = append(addrs, ip)
			idx = append(idx, int32(i))
		}
		c.account(len(addrs)+cached, cached)
		if len(addrs) > 0 {
			ms := rw.matches[:len(addrs)]
			if len(addrs) == n {
				// Every event is looked up: the values go straight to
				// their events.
				_ = rw.mm.LookupFieldsBatch(addrs, r.mmFields, rw.mmVals[:n*nf], ms)
			} else {
				bv := rw.batchVals[:len(addrs)*nf]
				_ = rw.mm.LookupFieldsBatch(addrs, r.mmFields, bv, ms)
				for j, i := range idx {
					copy(rw.mmVals[int(i)*nf:(int(i)+1)*nf], bv[j*nf:(j+1)*nf])
				}
			}
			for j, i := range idx {
				m := &ms[j]
				if m.Found() {
					hit[i] = true
					hits++
				}
				if !useCache {
					continue
				}
				if p := m.Prefix(); p.IsValid() {
					e := c.slot(addrs[j])
					e.valid, e.prefix, e.found = true, p, m.Found()
					copy(c.vals[e.idx*nf:(e.idx+1)*nf], rw.mmVals[int(i)*nf:(int(i)+1)*nf])
				}
			}
		}
		rw.addrs, rw.idx = addrs, idx
	default:
		r.stats.noTable.Add(uint64(n))
		for i := range evs {
			evs[i].tags |= tagNoTable
		}
	}
	bit := uint64(1) << uint(ri)
	for i := range evs {
		if !hit[i] {
			evs[i].misses |= bit
		}
	}
	r.stats.hits.Add(hits)
	r.stats.misses.Add(uint64(n) - hits)
	if badKey > 0 {
		r.stats.badKey.Add(badKey)
	}
}

// parseIP parses an IPv4 dotted quad without allocating, falling back to
// netip for anything else.
func parseIP(b []byte) (netip.Addr, bool) {
	var a [4]byte
	part, val, digits := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits > 0 && val == 0 {
				return parseIPSlow(b) // a leading zero: only IPv6 ("0db8:...") has them
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return parseIPSlow(b) // IPv6 ("2001:db8::1"), or not an address
			}
		case c == '.' && digits > 0 && part < 3:
			a[part] = byte(val)
			part++
			val, digits = 0, 0
		case c == ':':
			return parseIPSlow(b)
		default:
			return parseIPSlow(b) // IPv6 ("fd00::1"), or not an address
		}
	}
	if part != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	a[3] = byte(val)
	return netip.AddrFrom4(a), true
}

func parseIPSlow(b []byte) (netip.Addr, bool) {
	if len(b) > 64 {
		return netip.Addr{}, false
	}
	var s [64]byte
	n := copy(s[:], b)
	ip, err := netip.ParseAddr(string(s[:n]))
	return ip.Unmap(), err == nil
}

// frame is an object the encoder has opened: where its member starts in
// the output, and whether a member preceded it.
type frame struct {
	mark  int
	comma bool
}

// encode appends event e as one JSON line: it runs the pipeline's encoding
// program, writing each member that has a value and dropping objects that
// end up empty.
func (w *worker) encode(i int, e *evState, out []byte) []byte {
	buf := out
	comma := false
	if e.kind == fmtJSON {
		t := bytes.TrimSpace(e.line)
		inner := bytes.TrimSpace(t[1 : len(t)-1])
		buf = append(buf, t[:len(t)-1]...)
		comma = len(inner) > 0
	} else {
		buf = append(buf, '{')
	}
	syslog := e.kind == fmtSyslog && e.ev.Format != parse.FormatUnknown
	frames, prog := w.frames, w.p.prog
	for k := range prog {
		o := &prog[k]
		// A leaf whose value is known to be absent is skipped; one that
		// turns out to be absent after its key is written sets ok false.
		mark, ok := len(buf), true
		switch o.kind {
		case lfNone:
			frames[o.depth] = frame{len(buf), comma}
			buf = o.key.append(buf, comma)
			comma = false
			continue
		case lfClose:
			if comma {
				buf = append(buf, o.end...)
			} else {
				f := frames[o.depth]
				buf, comma = buf[:f.mark], f.comma
			}
			continue
		case lfKV:
			buf, comma = w.writeKV(buf, i, e, comma)
			continue
		case lfTimestamp:
			if e.kind == fmtJSON {
				continue
			}
			buf = append(o.key.append(buf, comma), '"')
			buf = parse.AppendTimestampRFC3339(buf, &e.ev, w.now)
			buf = append(buf, '"')
		case lfHostName:
			if !syslog || e.ev.Host == nil {
				continue
			}
			buf = parse.AppendString(o.key.append(buf, comma), e.ev.Host)
		case lfFacility:
			if !syslog {
				continue
			}
			buf = strconv.AppendInt(o.key.append(buf, comma), int64(e.ev.Facility), 10)
		case lfSeverity:
			if !syslog {
				continue
			}
			buf = strconv.AppendInt(o.key.append(buf, comma), int64(e.ev.Severity), 10)
		case lfAppName:
			if !syslog || e.ev.App == nil {
				continue
			}
			buf = parse.AppendString(o.key.append(buf, comma), e.ev.App)
		case lfMsgID:
			if !syslog || e.ev.MsgID == nil {
				continue
			}
			buf = parse.AppendString(o.key.append(buf, comma), e.ev.MsgID)
		case lfProcIDStr:
			if !syslog || e.ev.ProcID == nil || isDigits(e.ev.ProcID) {
				continue
			}
			buf = parse.AppendString(o.key.append(buf, comma), e.ev.ProcID)
		case lfPID:
			if !syslog || !isDigits(e.ev.ProcID) {
				continue
			}
			buf = append(o.key.append(buf, comma), e.ev.ProcID...)
		case lfSD:
			if !syslog || len(e.ev.StructuredData) == 0 {
				continue
			}
			buf, ok = w.writeSD(o.key.append(buf, comma), e.ev.StructuredData)
		case lfMessage:
			switch {
			case e.kind == fmtJSON, e.kind == fmtSyslog && e.ev.Message == nil && e.ev.Format != parse.FormatUnknown:
				continue
			case e.kind == fmtSyslog:
				buf = parse.AppendString(o.key.append(buf, comma), e.ev.Message)
			default:
				buf = parse.AppendString(o.key.append(buf, comma), e.line)
			}
		case lfOriginal:
			if e.kind == fmtJSON {
				continue
			}
			buf = parse.AppendString(o.key.append(buf, comma), e.line)
		case lfLUTCol, lfLUTAll, lfMMDB, lfDefault:
			if e.misses&(1<<uint(o.rule)) != 0 {
				// A miss writes the default, if any.
				if o.def == nil {
					continue
				}
				buf = append(o.key.append(buf, comma), o.def...)
				break
			}
			rw := &w.rw[o.rule]
			switch o.kind {
			case lfLUTCol:
				ci := rw.colIdx[o.col]
				if ci < 0 {
					continue
				}
				buf = parse.AppendString(o.key.append(buf, comma), rw.views[i].Col(ci))
			case lfLUTAll:
				buf = rw.appendRow(o.key.append(buf, comma), i)
			case lfMMDB:
				buf, ok = mmValue(o.key.append(buf, comma), rw.mmVals[i*rw.nf+o.col])
			default:
				continue
			}
		default:
			continue
		}
		if !ok {
			buf = buf[:mark]
			continue
		}
		if len(o.end) > 0 {
			buf = append(buf, o.end...)
		}
		comma = true
	}
	if e.tags != 0 || e.misses != 0 {
		buf = w.writeTags(buf, e, comma)
	}
	return append(buf, '}', '\n')
}

// memberKeyPad is the size of memberKey.pad.
const memberKeyPad = 40

// memberKey is a member's pre-encoded `,"name":`. pad holds it too, so
// that a key of up to 33 bytes is written with one fixed-size move.
type memberKey struct {
	b   []byte
	pad [memberKeyPad]byte
}

func newMemberKey(b []byte) memberKey {
	k := memberKey{b: b}
	copy(k.pad[:], b)
	return k
}

// append appends the key, without its comma when no member precedes it.
func (k *memberKey) append(buf []byte, comma bool) []byte {
	off := 1
	if comma {
		off = 0
	}
	n, l := len(k.b)-off, len(buf)
	if n <= 32 && cap(buf)-l >= 32 {
		copy32(buf[l:cap(buf)], k.pad[off:])
		return buf[:l+n]
	}
	return append(buf, k.b[off:]...)
}

func (w *worker) writeTags(buf []byte, e *evState, comma bool) []byte {
	mark := len(buf)
	if comma {
		buf = append(buf, ',')
	}
	buf = append(buf, `"tags":[`...)
	first := true
	for j, t := range w.p.tagJSON {
		if e.tags&(1<<j) != 0 {
			if !first {
				buf = append(buf, ',')
			}
			buf = append(buf, t...)
			first = false
		}
	}
	for ri, r := range w.p.rules {
		if e.misses&(1<<uint(ri)) != 0 && r.missTag != nil {
			if !first {
				buf = append(buf, ',')
			}
			buf = append(buf, r.missTag...)
			first = false
		}
	}
	if first {
		return buf[:mark]
	}
	return append(buf, ']')
}

func isDigits(b []byte) bool {
	if len(b) == 0 || len(b) > 18 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendRow appends event i's row as an object of every column.
//
// The common case, a row none of whose values needs escaping (one check
// over all of them), copies each key and each value with fixed-size moves:
// a key as its padded array, a value as the rowValPad bytes from its start
// (the mapping goes on after the row, so they can be read; what is copied
// too much, the next key or value overwrites). A row with a byte to escape
// is encoded value by value.
func (rw *ruleWork) appendRow(buf []byte, i int) []byte {
	v := rw.views[i]
	values := v.Values()
	// The end offsets: read straight from the record when they are 16-bit
	// (checked below as they are used), else checked and widened first.
	e16, narrow := v.Ends16()
	ends, cols := rw.ends[:0], len(e16)/2
	if !narrow {
		var ok bool
		if ends, ok = v.Ends(ends); !ok {
			return rw.appendRowEsc(buf, v) // a damaged row's bad values are empty
		}
		rw.ends, cols = ends, len(ends)
	}
	keys := rw.rowKeys[:min(len(rw.rowKeys), cols)]
	if len(keys) == 0 {
		return append(buf, '{', '}')
	}
	if parse.NeedsEscape(values) {
		return rw.appendRowEsc(buf, v)
	}
	mark := len(buf)
	buf = slices.Grow(buf, len(values)+rw.keysRoom+rowValPad)
	b := buf[:cap(buf)]
	l := len(buf)
	room := values[:cap(values)]
	start := 0
	for j := range keys {
		k := &keys[j]
		if len(k.b) <= rowKeyPad {
			*(*[rowKeyPad]byte)(b[l:]) = k.pad
		} else {
			copy(b[l:], k.b)
		}
		l += len(k.b)
		var end int
		if narrow {
			end = int(binary.LittleEndian.Uint16(e16[2*j:]))
		} else {
			end = int(ends[j])
		}
		if end < start || end > len(values) {
			return rw.appendRowEsc(buf[:mark], v) // damaged
		}
		if end-start <= rowValPad && start+rowValPad <= len(room) {
			copy32(b[l:], room[start:])
		} else {
			copy(b[l:], values[start:end])
		}
		l += end - start
		start = end
	}
	return append(buf[:l], '"', '}')
}

// rowValPad is how many bytes appendRow moves for a value at once.
const rowValPad = 32

// copy32 copies the first 32 bytes of src to dst, as four words: an array
// copy would call memmove, as src and dst might overlap.
func copy32(dst, src []byte) {
	src, dst = src[:32], dst[:32]
	le := binary.LittleEndian
	a0, a1, a2, a3 := le.Uint64(src), le.Uint64(src[8:]), le.Uint64(src[16:]), le.Uint64(src[24:])
	le.PutUint64(dst, a0)
	le.PutUint64(dst[8:], a1)
	le.PutUint64(dst[16:], a2)
	le.PutUint64(dst[24:], a3)
}

// appendRowEsc is appendRow for a row with values to escape, or a damaged
// one.
func (rw *ruleWork) appendRowEsc(buf []byte, v reader.View) []byte {
	rw.vals = v.Cols(rw.vals[:0])
	n := min(len(rw.rowKeys), len(rw.vals))
	for j, val := range rw.vals[:n] {
		buf = append(buf, rw.rowKeys[j].b...)
		buf = parse.AppendEscaped(buf, val)
	}
	return append(buf, '"', '}')
}

// rowKeyPad is the size of rowKey.pad.
const rowKeyPad = 32

// rowKey is what precedes a column's value in the object of a whole row:
// `{"col":"` for the first column, then `","col":"`. pad holds it too when
// it fits, so that it can be copied with a fixed-size move.
type rowKey struct {
	b   []byte
	pad [rowKeyPad]byte
}

func mmValue(buf []byte, v mmdb.Value) ([]byte, bool) {
	switch v.Kind() {
	case mmdb.KindString, mmdb.KindBytes:
		buf = parse.AppendString(buf, v.Bytes())
	case mmdb.KindUint16, mmdb.KindUint32, mmdb.KindUint64:
		buf = strconv.AppendUint(buf, v.Uint(), 10)
	case mmdb.KindUint128:
		hi, lo := v.Uint128()
		if hi != 0 {
			return buf, false
		}
		buf = strconv.AppendUint(buf, lo, 10)
	case mmdb.KindInt32:
		buf = strconv.AppendInt(buf, v.Int(), 10)
	case mmdb.KindDouble, mmdb.KindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return buf, false
		}
		bits := 64
		if v.Kind() == mmdb.KindFloat {
			bits = 32
		}
		buf = strconv.AppendFloat(buf, f, 'g', -1, bits)
	case mmdb.KindBool:
		buf = strconv.AppendBool(buf, v.Bool())
	default:
		return buf, false
	}
	return buf, true
}

// writeSD writes structured data as {"SD-ID":{"name":"value",...},...}.
func (w *worker) writeSD(buf, sd []byte) ([]byte, bool) {
	if len(sd) == 0 {
		return buf, false
	}
	start := len(buf)
	buf = append(buf, '{')
	var cur []byte
	open, params := false, 0
	parse.EachSDParam(sd, func(id, name, value []byte) bool {
		if !open || !bytes.Equal(id, cur) {
			if open {
				buf = append(buf, '}', ',')
			}
			buf = parse.AppendKey(buf, id)
			buf = append(buf, '{')
			cur, open, params = id, true, 0
		}
		if name == nil {
			return true
		}
		if params > 0 {
			buf = append(buf, ',')
		}
		params++
		buf = parse.AppendKey(buf, name)
		if bytes.IndexByte(value, '\\') >= 0 {
			w.tmp = parse.AppendSDUnescape(w.tmp[:0], value)
			value = w.tmp
		}
		buf = parse.AppendString(buf, value)
		return true
	})
	if !open {
		return buf[:start], false
	}
	return append(buf, '}', '}'), true
}

// writeKV writes the key=value pairs of the message as top-level members.
func (w *worker) writeKV(buf []byte, i int, e *evState, comma bool) ([]byte, bool) {
	p := w.p
	if e.kind == fmtJSON || p.kvMode == 0 {
		return buf, comma
	}
	if p.kvMode == 1 {
		nkv := len(p.kvKeys)
		for j, v := range w.kvVals[i*nkv : (i+1)*nkv] {
			if v == nil || p.kvSkip[j] {
				continue
			}
			buf = p.kvKeyJSON[j].append(buf, comma)
			buf = parse.AppendString(buf, v)
			comma = true
		}
		return buf, comma
	}
	parse.EachKV(e.body, func(k, v []byte) bool {
		if len(k) == 0 || p.topNames[string(k)] {
			return true
		}
		if comma {
			buf = append(buf, ',')
		}
		buf = parse.AppendKey(buf, k)
		buf = parse.AppendString(buf, v)
		comma = true
		return true
	})
	return buf, comma
}
