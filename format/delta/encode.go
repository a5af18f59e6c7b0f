package delta

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/format"
)

// Stats describe an encoded delta.
type Stats struct {
	// Size is the delta's size in bytes (header and compressed body).
	Size int64
	// Copied, Literal and Derived are the target bytes copied from the
	// base, carried as literals, and derived (the SLOTS section).
	Copied, Literal, Derived int64
	// Ops is the number of operations.
	Ops int
}

type op struct {
	code     byte
	off, len uint64 // COPY: base offset; LITERAL: target offset
}

// Encode writes to w a delta that rebuilds target from base. When target
// is a .lut table whose SLOTS section can be derived from its DATA and
// MPHF sections (every table the compiler writes), that section costs no
// bytes; any other file is encoded as copies and literals only.
func Encode(w io.Writer, base, target []byte) (Stats, error) {
	var st Stats
	idx := indexChunks(base)
	var ops []op
	var sp *slotsParams
	slotsOff, slotsLen := slotsRange(target, &sp)
	if sp != nil {
		ops = matchRange(ops, idx, base, target, 0, slotsOff)
		ops = append(ops, op{code: opSlots, len: slotsLen})
		ops = matchRange(ops, idx, base, target, slotsOff+slotsLen, uint64(len(target)))
	} else {
		ops = matchRange(ops, idx, base, target, 0, uint64(len(target)))
	}
	var body []byte
	le := binary.LittleEndian
	for _, o := range ops {
		body = append(body, o.code)
		switch o.code {
		case opCopy:
			body = binary.AppendUvarint(body, o.off)
			body = binary.AppendUvarint(body, o.len)
			st.Copied += int64(o.len)
		case opLiteral:
			body = binary.AppendUvarint(body, o.len)
			body = append(body, target[o.off:o.off+o.len]...)
			st.Literal += int64(o.len)
		case opSlots:
			body = binary.AppendUvarint(body, o.len)
			for _, v := range []uint64{sp.dataOff, sp.dataLen, sp.mphfOff, sp.mphfLen} {
				body = binary.AppendUvarint(body, v)
			}
			body = le.AppendUint64(body, sp.seed)
			body = binary.AppendUvarint(body, sp.columns)
			body = append(body, sp.policy)
			st.Derived += int64(o.len)
		}
	}
	body = append(body, opEnd)
	st.Ops = len(ops)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return st, err
	}
	z := enc.EncodeAll(body, nil)
	h := Header{Base: sha256.Sum256(base), Target: sha256.Sum256(target),
		BaseSize: uint64(len(base)), TargetSize: uint64(len(target)), BodyLen: uint64(len(z)), BodySum: xxh3.Hash(z)}
	if _, err := w.Write(h.encode()); err != nil {
		return st, err
	}
	if _, err := w.Write(z); err != nil {
		return st, err
	}
	st.Size = HeaderSize + int64(len(z))
	return st, nil
}

// slotsRange finds target's SLOTS section and, when deriving it from
// DATA and MPHF gives exactly its bytes, sets *sp.
func slotsRange(target []byte, sp **slotsParams) (off, n uint64) {
	h, err := format.DecodeHeader(target, int64(len(target)))
	if err != nil {
		return 0, 0
	}
	secs, err := format.DecodeSections(target, &h)
	if err != nil {
		return 0, 0
	}
	d, m, s := secs[format.SectionData], secs[format.SectionMPHF], secs[format.SectionSlots]
	if d.Off+d.Len > s.Off || m.Off+m.Len > s.Off || s.Len != 8*h.Rows {
		return 0, 0
	}
	var meta format.Meta
	_ = json.Unmarshal(target[secs[format.SectionMeta].Off:][:secs[format.SectionMeta].Len], &meta)
	p := slotsParams{dataOff: d.Off, dataLen: d.Len, mphfOff: m.Off, mphfLen: m.Len, seed: h.Seed, columns: uint64(h.Columns)}
	if meta.OnDuplicate == "last" {
		p.policy = policyLast
	}
	got, err := deriveSlots(bytes.NewReader(target[d.Off:d.Off+d.Len]), target[m.Off:m.Off+m.Len], h.Rows, p)
	if err != nil || !bytes.Equal(got, target[s.Off:s.Off+s.Len]) {
		return 0, 0
	}
	*sp = &p
	return s.Off, s.Len
}

// chunkIndex maps the XXH3 of each chunk of the base to its offset.
type chunkIndex map[uint64]uint64

func indexChunks(base []byte) chunkIndex {
	idx := chunkIndex{}
	for off := 0; off < len(base); {
		n := nextChunk(base[off:])
		if _, ok := idx[xxh3.Hash(base[off:off+n])]; !ok {
			idx[xxh3.Hash(base[off:off+n])] = uint64(off)
		}
		off += n
	}
	return idx
}

// matchRange appends the operations that produce target[t0:t1]: the
// target's chunks found in the base, each match grown backwards and
// forwards byte by byte as far as both files agree, and literals between.
func matchRange(ops []op, idx chunkIndex, base, target []byte, t0, t1 uint64) []op {
	lit := t0 // start of the pending literal
	emitCopy := func(b, n uint64) {
		if k := len(ops) - 1; k >= 0 && ops[k].code == opCopy && ops[k].off+ops[k].len == b {
			ops[k].len += n
			return
		}
		ops = append(ops, op{code: opCopy, off: b, len: n})
	}
	for t := t0; t < t1; {
		n := uint64(nextChunk(target[t:t1]))
		b, ok := idx[xxh3.Hash(target[t:t+n])]
		if !ok || b+n > uint64(len(base)) || !bytes.Equal(base[b:b+n], target[t:t+n]) {
			t += n
			continue
		}
		// Backwards into the pending literal.
		for t > lit && b > 0 && base[b-1] == target[t-1] {
			t, b, n = t-1, b-1, n+1
		}
		// Forwards, a block at a time, then byte by byte.
		for {
			e, be := t+n, b+n
			k := min(uint64(4096), t1-e, uint64(len(base))-be)
			if k == 0 {
				break
			}
			if bytes.Equal(base[be:be+k], target[e:e+k]) {
				n += k
				continue
			}
			for k = 0; base[be+k] == target[e+k]; k++ {
			}
			n += k
			break
		}
		if t > lit {
			ops = append(ops, op{code: opLiteral, off: lit, len: t - lit})
		}
		emitCopy(b, n)
		t += n
		lit = t
	}
	if t1 > lit {
		ops = append(ops, op{code: opLiteral, off: lit, len: t1 - lit})
	}
	return ops
}
