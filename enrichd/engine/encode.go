package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// frame is an object the encoder has opened: where its member starts in
// the output, and whether a member preceded it.
type frame struct {
	mark  int
	comma bool
}

// encode appends event e as one JSON line: with the fused program of its
// present members when there is one, else with the encoding program.
func (w *Worker) encode(i int, e *evState, out []byte) []byte {
	if e.kind != JSON && w.p.fused.ok {
		syslog := e.kind == Syslog && e.ev.Format != parse.FormatUnknown
		pid := syslog && isJSONUint(e.ev.ProcID)
		if fp := w.fusedFor(w.presence(i, e, syslog, pid)); fp != nil {
			if buf, ok := w.encodeFused(fp, i, e, out); ok {
				return buf
			}
		}
	}
	return w.encodeProgram(i, e, out)
}

// encodeProgram is encode by the engine's encoding program: it writes each
// member that has a value and drops objects that end up empty.
func (w *Worker) encodeProgram(i int, e *evState, out []byte) []byte {
	buf := out
	comma := false
	if e.kind == JSON {
		t := bytes.TrimSpace(e.line)
		inner := bytes.TrimSpace(t[1 : len(t)-1])
		buf = append(buf, t[:len(t)-1]...)
		oneLine(buf[len(buf)-len(t)+1:])
		comma = len(inner) > 0
	} else {
		buf = append(buf, '{')
	}
	syslog := e.kind == Syslog && e.ev.Format != parse.FormatUnknown
	// A PROCID is written as process.pid or as log.syslog.procid.
	pid := syslog && isJSONUint(e.ev.ProcID)
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
				buf = o.end.append(buf)
			} else {
				f := frames[o.depth]
				buf, comma = buf[:f.mark], f.comma
			}
			continue
		case lfKV:
			buf, comma = w.writeKV(buf, i, e, comma)
			continue
		case lfTimestamp:
			if e.kind == JSON {
				continue
			}
			buf = append(o.key.append(buf, comma), '"')
			buf = parse.AppendTimestampRFC3339(buf, &e.ev, w.now)
			buf = append(buf, '"')
		case lfHostName:
			if !syslog || e.ev.Host == nil {
				continue
			}
			buf = jsonstr.AppendString(o.key.append(buf, comma), e.ev.Host)
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
			buf = jsonstr.AppendString(o.key.append(buf, comma), e.ev.App)
		case lfMsgID:
			if !syslog || e.ev.MsgID == nil {
				continue
			}
			buf = jsonstr.AppendString(o.key.append(buf, comma), e.ev.MsgID)
		case lfProcIDStr:
			if !syslog || e.ev.ProcID == nil || pid {
				continue
			}
			buf = jsonstr.AppendString(o.key.append(buf, comma), e.ev.ProcID)
		case lfPID:
			if !pid {
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
			case e.kind == JSON, e.kind == Syslog && e.ev.Message == nil && e.ev.Format != parse.FormatUnknown:
				continue
			case e.kind == Syslog:
				buf = jsonstr.AppendString(o.key.append(buf, comma), e.ev.Message)
			default:
				buf = jsonstr.AppendString(o.key.append(buf, comma), e.line)
			}
		case lfTLSClient:
			if w.client == nil {
				continue
			}
			buf = jsonstr.AppendString(o.key.append(buf, comma), w.client)
		case lfOriginal:
			if e.kind == JSON {
				continue
			}
			buf = jsonstr.AppendString(o.key.append(buf, comma), e.line)
		case lfEach:
			v := w.rw[o.rule].eachValue(i)
			if len(v) == 0 {
				continue
			}
			buf = append(o.key.append(buf, comma), v...)
		case lfLUTCol, lfLUTAll, lfMMDB, lfDefault:
			if e.misses&(1<<uint(o.rule)) != 0 {
				// A miss writes the default, if any; a rule whose When
				// did not hold writes nothing.
				if o.def == nil || e.skips&(1<<uint(o.rule)) != 0 {
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
				if v := rw.views[i].Col(ci); rw.colType == nil {
					buf = jsonstr.AppendString(o.key.append(buf, comma), v)
				} else {
					buf = rw.appendTyped(o.key.append(buf, comma), v, ci)
				}
			case lfLUTAll:
				buf = rw.row.Append(o.key.append(buf, comma), rw.views[i])
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
		if len(o.end.b) > 0 {
			buf = o.end.append(buf)
		}
		comma = true
	}
	if e.tags != 0 || e.misses&^e.skips&w.p.missTags != 0 {
		buf = w.writeTags(buf, e, comma)
	}
	return append(buf, '}', '\n')
}

// memberKeyPad is the size of each of memberKey.pad.
const memberKeyPad = 48

// memberKey is a member's pre-encoded `,"name":`. pad holds it twice,
// without its comma and with it, so that a key of up to memberKeyPad bytes
// is written with one fixed-size move and no arithmetic on its length.
type memberKey struct {
	b   []byte
	pad [2][memberKeyPad]byte // [0] without the comma, [1] with it
	n   [2]int                // the lengths in pad, or 0 for a longer key
}

func newMemberKey(b []byte) memberKey {
	k := memberKey{b: b}
	if len(b) <= memberKeyPad {
		copy(k.pad[0][:], b[1:])
		copy(k.pad[1][:], b)
		k.n = [2]int{len(b) - 1, len(b)}
	}
	return k
}

// append appends the key, without its comma when no member precedes it.
func (k *memberKey) append(buf []byte, comma bool) []byte {
	c := 0
	if comma {
		c = 1
	}
	if l, n := len(buf), k.n[c]; n > 0 && cap(buf)-l >= memberKeyPad {
		*(*[memberKeyPad]byte)(buf[l : l+memberKeyPad]) = k.pad[c]
		return buf[:l+n]
	}
	return append(buf, k.b[1-c:]...)
}

// closePad is the size of closer.pad.
const closePad = 8

// closer is the pre-encoded end of a member or object (`}`, `}}`), padded
// like memberKey for the short ones.
type closer struct {
	b   []byte
	pad [closePad]byte
}

func newCloser(b []byte) closer {
	c := closer{b: b}
	copy(c.pad[:], b)
	return c
}

// append appends the end.
func (c *closer) append(buf []byte) []byte {
	if l, n := len(buf), len(c.b); n <= closePad && cap(buf)-l >= closePad {
		*(*[closePad]byte)(buf[l : l+closePad]) = c.pad
		return buf[:l+n]
	}
	return append(buf, c.b...)
}

func (w *Worker) writeTags(buf []byte, e *evState, comma bool) []byte {
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
		if (e.misses&^e.skips)&(1<<uint(ri)) != 0 && r.missTag != nil {
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

// isJSONUint reports whether b is a JSON number of up to 18 digits
// without a sign, fraction or exponent: digits, and no leading zero
// unless b is "0" (007 is not JSON).
func isJSONUint(b []byte) bool {
	if len(b) == 0 || len(b) > 18 || b[0] == '0' && len(b) > 1 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// oneLine turns the line breaks of a valid JSON text into spaces, so that
// an object spread over several lines (one an octet-counted frame or a
// Kafka message may hold) is written as one line. In valid JSON a '\n' or
// '\r' can only be whitespace between tokens: inside a string it is
// escaped.
func oneLine(b []byte) {
	if bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0 {
		return
	}
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
}

// validJSONObject reports whether line is one JSON object in valid UTF-8.
func validJSONObject(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}' && utf8.Valid(t) && json.Valid(t)
}

func mmValue(buf []byte, v mmdb.Value) ([]byte, bool) {
	switch v.Kind() {
	case mmdb.KindString, mmdb.KindBytes:
		buf = jsonstr.AppendString(buf, v.Bytes())
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
func (w *Worker) writeSD(buf, sd []byte) ([]byte, bool) {
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
			buf = jsonstr.AppendKey(buf, id)
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
		buf = jsonstr.AppendKey(buf, name)
		if bytes.IndexByte(value, '\\') >= 0 {
			w.tmp = parse.AppendSDUnescape(w.tmp[:0], value)
			value = w.tmp
		}
		buf = jsonstr.AppendString(buf, value)
		return true
	})
	if !open {
		return buf[:start], false
	}
	return append(buf, '}', '}'), true
}

// writeKV writes the key=value pairs of the message as top-level members.
func (w *Worker) writeKV(buf []byte, i int, e *evState, comma bool) ([]byte, bool) {
	p := w.p
	if e.kind == JSON || p.kvMode == 0 {
		return buf, comma
	}
	if p.kvMode == 1 {
		nkv := len(p.kvKeys)
		for j, v := range w.kvVals[i*nkv : (i+1)*nkv] {
			if v == nil || p.kvSkip[j] {
				continue
			}
			buf = p.kvKeyJSON[j].append(buf, comma)
			buf = jsonstr.AppendString(buf, v)
			comma = true
		}
		return buf, comma
	}
	parse.EachKV(e.body, func(k, v []byte) bool {
		if len(k) == 0 || (p.topMask&topBit(k) != 0 && p.topNames[string(k)]) {
			return true
		}
		if comma {
			buf = append(buf, ',')
		}
		buf = jsonstr.AppendKey(buf, k)
		buf = jsonstr.AppendString(buf, v)
		comma = true
		return true
	})
	return buf, comma
}
