package engine

import (
	"math"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// A fused program is the encoding program specialised to one set of
// present leaves: which members of the output an event has decides every
// comma, every object opened and every object dropped, so that all the
// bytes between two values are known in advance. Encoding an event with
// it alternates one literal copy (`","host":{"name":"` or
// `"},"log":{"syslog":{"facility":{"code":`) with one value, instead of
// walking every open, key and close of the program.
//
// An event's set of present leaves is its presence mask, bit n for the
// n-th leaf of the program (its leaf ops, with one leaf for each
// key=value pair the lfKV op may write). Workers build the fused program of a mask
// the first time they meet it and keep it (events have few distinct
// masks: the header fields a sender writes, which rules hit).

// maxFused is how many fused programs a worker keeps; events whose mask
// is not among them are encoded by the program itself.
const maxFused = 256

// fusedSlots is the size of a worker's direct-mapped table of fused
// programs, in front of its map of them.
const fusedSlots = 32

// litPad is the size of lit.pad.
const litPad = 64

// lit is the pre-encoded bytes between two values of a fused program.
// pad holds them when they fit, so that they are written with one
// fixed-size move.
type lit struct {
	b   []byte
	pad [litPad]byte
}

func newLit(b []byte) lit {
	l := lit{b: b}
	copy(l.pad[:], b)
	return l
}

// append appends the literal.
func (t *lit) append(buf []byte) []byte {
	if l, n := len(buf), len(t.b); n <= litPad && cap(buf)-l >= litPad {
		*(*[litPad]byte)(buf[l : l+litPad]) = t.pad
		return buf[:l+n]
	}
	return append(buf, t.b...)
}

// fusedSeg is a literal and the leaf whose value follows it.
type fusedSeg struct {
	lit  lit
	kind leafKind // op.kind, or lfKV for one key=value pair
	kv   int      // lfKV: the pair's index in Engine.kvKeys
	op   *op
}

// fusedProg is the encoding program fused for one presence mask.
type fusedProg struct {
	segs  []fusedSeg
	tail  lit  // after the last value, before the tags
	comma bool // a member precedes the tags
}

// fusedPlan is what an Engine precomputes to find an event's presence
// mask fast.
type fusedPlan struct {
	ok     bool            // the program can be fused (few enough leaves, no KVAll)
	leaf   []int8          // prog index -> leaf number, or -1
	hdr    [lfClose]uint64 // the bit of the leaf of each header kind, or 0
	always uint64          // leaves every non-JSON event has: @timestamp, event.original
	// Per rule: the leaves written on a miss (those with a default), the
	// lfLUTAll leaves, and the lfLUTCol and lfMMDB leaves.
	missBits []uint64
	allBits  []uint64
	colLeafs [][]leafRef
	mmLeafs  [][]leafRef
	// eachBits are the lfEach leaves of the Each rules (by rule).
	eachBits []uint64
	// kvBits are the leaves of the key=value pairs (KVUsed): one per key
	// of Engine.kvKeys that is written, 0 for the others.
	kvBits []uint64
}

// leafRef is a rule's leaf: its bit and its column or field.
type leafRef struct {
	bit uint64
	col int
}

// quotedLeaf reports whether a leaf's value is a JSON string whose quotes
// a fused program writes in its literals.
func quotedLeaf(k leafKind) bool {
	switch k {
	case lfTimestamp, lfHostName, lfAppName, lfMsgID, lfProcIDStr, lfMessage, lfOriginal, lfTLSClient:
		return true
	}
	return false
}

// planFused prepares p's program for fusing.
func (p *Engine) planFused() {
	f := &p.fused
	f.leaf = make([]int8, len(p.prog))
	f.missBits = make([]uint64, len(p.rules))
	f.allBits = make([]uint64, len(p.rules))
	f.colLeafs = make([][]leafRef, len(p.rules))
	f.mmLeafs = make([][]leafRef, len(p.rules))
	f.kvBits = make([]uint64, len(p.kvKeys))
	f.eachBits = make([]uint64, len(p.rules))
	n := 0
	for k := range p.prog {
		o := &p.prog[k]
		f.leaf[k] = -1
		if o.kind == lfNone || o.kind == lfClose {
			continue
		}
		if p.kvMode == 2 {
			return // f.ok stays false
		}
		if o.kind == lfKV {
			// Each pair written is a leaf of its own.
			if p.kvMode == 0 {
				continue
			}
			for j := range p.kvKeys {
				if p.kvSkip[j] {
					continue
				}
				if n == 64 {
					return
				}
				f.kvBits[j] = uint64(1) << n
				n++
			}
			continue
		}
		if n == 64 {
			return
		}
		f.leaf[k] = int8(n)
		bit := uint64(1) << n
		n++
		switch o.kind {
		case lfLUTCol, lfLUTAll, lfMMDB, lfDefault:
			if o.def != nil {
				f.missBits[o.rule] |= bit
			}
			switch o.kind {
			case lfLUTCol:
				f.colLeafs[o.rule] = append(f.colLeafs[o.rule], leafRef{bit, o.col})
			case lfLUTAll:
				f.allBits[o.rule] |= bit
			case lfMMDB:
				f.mmLeafs[o.rule] = append(f.mmLeafs[o.rule], leafRef{bit, o.col})
			}
		case lfEach:
			f.eachBits[o.rule] = bit
		case lfTimestamp, lfOriginal:
			f.always |= bit
			f.hdr[o.kind] = bit
		default:
			f.hdr[o.kind] = bit
		}
	}
	f.ok = true
}

// fuseProgram returns the fused program of p for mask.
func (p *Engine) fuseProgram(mask uint64) *fusedProg {
	fp := &fusedProg{}
	cur := []byte{'{'}
	comma := false
	frames := make([]frame, p.depth)
	for k := range p.prog {
		o := &p.prog[k]
		switch o.kind {
		case lfNone:
			frames[o.depth] = frame{len(cur), comma}
			cur = appendKey(cur, &o.key, comma)
			comma = false
			continue
		case lfClose:
			if comma {
				cur = append(cur, o.end.b...)
			} else {
				// Nothing was written since the object opened, so its
				// key is in cur.
				f := frames[o.depth]
				cur, comma = cur[:f.mark], f.comma
			}
			continue
		}
		if o.kind == lfKV {
			for j, bit := range p.fused.kvBits {
				if mask&bit == 0 {
					continue
				}
				cur = append(appendKey(cur, &p.kvKeyJSON[j], comma), '"')
				fp.segs = append(fp.segs, fusedSeg{lit: newLit(cur), kind: lfKV, kv: j, op: o})
				cur = append([]byte(nil), '"')
				comma = true
			}
			continue
		}
		if p.fused.leaf[k] < 0 || mask&(1<<p.fused.leaf[k]) == 0 {
			continue
		}
		cur = appendKey(cur, &o.key, comma)
		q := quotedLeaf(o.kind)
		if q {
			cur = append(cur, '"')
		}
		fp.segs = append(fp.segs, fusedSeg{lit: newLit(cur), kind: o.kind, op: o})
		cur = nil
		if q {
			cur = append(cur, '"')
		}
		cur = append(cur, o.end.b...)
		comma = true
	}
	fp.tail, fp.comma = newLit(cur), comma
	return fp
}

// appendKey appends a member key, without its comma when no member
// precedes it.
func appendKey(b []byte, k *memberKey, comma bool) []byte {
	if comma {
		return append(b, k.b...)
	}
	return append(b, k.b[1:]...)
}

// fusedCache is a worker's fused programs.
type fusedCache struct {
	slots [fusedSlots]struct {
		mask uint64
		fp   *fusedProg
	}
	all map[uint64]*fusedProg
}

// fusedFor returns the fused program for mask, or nil when the worker
// keeps maxFused others already.
func (w *Worker) fusedFor(mask uint64) *fusedProg {
	c := &w.fusedProgs
	s := &c.slots[(mask*0x9E3779B97F4A7C15)>>(64-5)]
	if s.fp != nil && s.mask == mask {
		return s.fp
	}
	fp := c.all[mask]
	if fp == nil {
		if len(c.all) >= maxFused {
			return nil
		}
		if c.all == nil {
			c.all = map[uint64]*fusedProg{}
		}
		fp = w.p.fuseProgram(mask)
		c.all[mask] = fp
	}
	s.mask, s.fp = mask, fp
	return fp
}

// presence returns the presence mask of event i (not a JSON one).
func (w *Worker) presence(i int, e *evState, syslog, pid bool) uint64 {
	p := w.p
	f := &p.fused
	m := f.always
	if syslog {
		m |= f.hdr[lfFacility] | f.hdr[lfSeverity]
		if e.ev.Host != nil {
			m |= f.hdr[lfHostName]
		}
		if e.ev.App != nil {
			m |= f.hdr[lfAppName]
		}
		if e.ev.MsgID != nil {
			m |= f.hdr[lfMsgID]
		}
		if pid {
			m |= f.hdr[lfPID]
		} else if e.ev.ProcID != nil {
			m |= f.hdr[lfProcIDStr]
		}
		if len(e.ev.StructuredData) > 0 {
			m |= f.hdr[lfSD]
		}
	}
	if !syslog || e.ev.Message != nil {
		m |= f.hdr[lfMessage]
	}
	if w.client != nil {
		m |= f.hdr[lfTLSClient]
	}
	if nkv := len(f.kvBits); nkv > 0 {
		for j, v := range w.kvVals[i*nkv : (i+1)*nkv] {
			if v != nil {
				m |= f.kvBits[j]
			}
		}
	}
	for _, ri := range p.eachRules {
		if len(w.rw[ri].eachValue(i)) > 0 {
			m |= f.eachBits[ri]
		}
	}
	for ri := range f.missBits {
		if e.misses&(1<<uint(ri)) != 0 {
			if e.skips&(1<<uint(ri)) == 0 {
				m |= f.missBits[ri]
			}
			continue
		}
		m |= w.hitBits[ri]
		if mm := f.mmLeafs[ri]; len(mm) > 0 {
			rw := &w.rw[ri]
			vals := rw.mmVals[i*rw.nf : (i+1)*rw.nf]
			for _, l := range mm {
				if mmPresent(vals[l.col]) {
					m |= l.bit
				}
			}
		}
	}
	return m
}

// setHitBits sets, for each rule, the leaves a hit writes that do not
// depend on the event: every lfLUTAll leaf, and the lfLUTCol leaves of
// the columns the table version has.
func (w *Worker) setHitBits() {
	f := &w.p.fused
	for ri := range f.allBits {
		m := f.allBits[ri]
		for _, l := range f.colLeafs[ri] {
			if w.rw[ri].colIdx[l.col] >= 0 {
				m |= l.bit
			}
		}
		w.hitBits[ri] = m
	}
}

// appendPart appends s, a part of an event's line, as the contents of a
// JSON string: as it is when clean says the line has no byte to escape.
func appendPart(buf, s []byte, clean bool) []byte {
	if clean {
		return append(buf, s...)
	}
	return jsonstr.AppendEscaped(buf, s)
}

// appendCode appends a syslog facility or severity code: from 0 to 23,
// as a parsed PRI (at most 191) gives them.
func appendCode(buf []byte, c int) []byte {
	if uint(c) < 10 {
		return append(buf, byte('0'+c))
	}
	return append(buf, byte('0'+c/10%10), byte('0'+c%10))
}

// mmPresent reports whether mmValue writes v.
func mmPresent(v mmdb.Value) bool {
	if v.Kind() == mmdb.KindString {
		return true
	}
	return mmPresentKind(v)
}

// mmPresentKind is mmPresent for values other than strings.
func mmPresentKind(v mmdb.Value) bool {
	switch v.Kind() {
	case mmdb.KindString, mmdb.KindBytes, mmdb.KindUint16, mmdb.KindUint32, mmdb.KindUint64,
		mmdb.KindInt32, mmdb.KindBool:
		return true
	case mmdb.KindUint128:
		hi, _ := v.Uint128()
		return hi == 0
	case mmdb.KindDouble, mmdb.KindFloat:
		f := v.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return false
}

// encodeFused is encode with fp, the fused program of event i's presence
// mask. It reports false, having written nothing, when a value turns out
// to be absent after all.
func (w *Worker) encodeFused(fp *fusedProg, i int, e *evState, out []byte) ([]byte, bool) {
	buf := out
	// The header fields, the message and the key=value values are parts
	// of the line: when it has no byte to escape, neither have they.
	clean := !jsonstr.NeedsEscape(e.line)
	for s := range fp.segs {
		sg := &fp.segs[s]
		buf = sg.lit.append(buf)
		o := sg.op
		switch sg.kind {
		case lfTimestamp:
			buf = parse.AppendTimestampRFC3339(buf, &e.ev, w.now)
		case lfHostName:
			buf = appendPart(buf, e.ev.Host, clean)
		case lfFacility:
			buf = appendCode(buf, e.ev.Facility)
		case lfSeverity:
			buf = appendCode(buf, e.ev.Severity)
		case lfAppName:
			buf = appendPart(buf, e.ev.App, clean)
		case lfMsgID:
			buf = appendPart(buf, e.ev.MsgID, clean)
		case lfProcIDStr:
			buf = appendPart(buf, e.ev.ProcID, clean)
		case lfPID:
			buf = append(buf, e.ev.ProcID...)
		case lfSD:
			var ok bool
			if buf, ok = w.writeSD(buf, e.ev.StructuredData); !ok {
				return out, false
			}
		case lfMessage:
			if e.kind == Syslog {
				buf = appendPart(buf, e.ev.Message, clean)
			} else {
				buf = appendPart(buf, e.line, clean)
			}
		case lfTLSClient:
			buf = jsonstr.AppendEscaped(buf, w.client)
		case lfOriginal:
			buf = appendPart(buf, e.line, clean)
		case lfKV:
			buf = appendPart(buf, w.kvVals[i*len(w.p.kvKeys)+sg.kv], clean)
		case lfEach:
			buf = append(buf, w.rw[o.rule].eachValue(i)...)
		default:
			if e.misses&(1<<uint(o.rule)) != 0 {
				buf = append(buf, o.def...)
				break
			}
			rw := &w.rw[o.rule]
			switch o.kind {
			case lfLUTCol:
				ci := rw.colIdx[o.col]
				if v := rw.views[i].Col(ci); rw.colType == nil {
					buf = jsonstr.AppendString(buf, v)
				} else {
					buf = rw.appendTyped(buf, v, ci)
				}
			case lfLUTAll:
				buf = rw.row.Append(buf, rw.views[i])
			case lfMMDB:
				var ok bool
				if buf, ok = mmValue(buf, rw.mmVals[i*rw.nf+o.col]); !ok {
					return out, false
				}
			}
		}
	}
	buf = fp.tail.append(buf)
	if e.tags != 0 || e.misses&^e.skips&w.p.missTags != 0 {
		buf = w.writeTags(buf, e, fp.comma)
	}
	return append(buf, '}', '\n'), true
}
