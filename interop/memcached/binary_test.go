package memcached

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"regexp"
	"testing"
	"time"
)

// Binary protocol opcodes used here.
const (
	opGet, opSet, opAdd, opReplace, opDelete, opIncr, opDecr, opQuit, opFlush = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
	opGetQ, opNoop, opVersion, opGetK, opGetKQ, opAppend, opPrepend, opStat   = 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10
	opSetQ, opAddQ, opReplaceQ, opDeleteQ, opIncrQ, opDecrQ, opQuitQ          = 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17
	opFlushQ, opAppendQ, opPrependQ, opTouch, opGat, opGatQ, opGatK, opGatKQ  = 0x18, 0x19, 0x1a, 0x1c, 0x1d, 0x1e, 0x23, 0x24
)

// req builds a binary request; bodyAdd corrupts the body length.
type req struct {
	op                 uint8
	extras, key, value []byte
	opaque             uint32
	bodyAdd            int
}

func (r req) bytes() []byte {
	b := make([]byte, 24)
	b[0] = 0x80
	b[1] = r.op
	binary.BigEndian.PutUint16(b[2:], uint16(len(r.key)))
	b[4] = uint8(len(r.extras))
	binary.BigEndian.PutUint32(b[8:], uint32(len(r.extras)+len(r.key)+len(r.value)+r.bodyAdd))
	binary.BigEndian.PutUint32(b[12:], r.opaque)
	return append(append(append(b, r.extras...), r.key...), r.value...)
}

func reqs(rs ...req) []byte {
	var b []byte
	for _, r := range rs {
		b = append(b, r.bytes()...)
	}
	return b
}

// endOpaque marks the NOOP that ends an exchange.
const endOpaque = 0xfeedface

// packets splits responses into packets; it fails on a partial one.
func packets(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 24 {
			t.Fatalf("partial header %q", b)
		}
		n := 24 + int(binary.BigEndian.Uint32(b[8:]))
		if n > len(b) {
			t.Fatalf("partial packet %q", b)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// exchangeBin sends request bytes on a new connection and returns the
// responses: up to and including the answer to a NOOP it appends (with
// close false), or everything until the server closes the connection.
func exchangeBin(t testing.TB, addr string, request []byte, close bool) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if !close {
		request = append(request[:len(request):len(request)], req{op: opNoop, opaque: endOpaque}.bytes()...)
	}
	// Written while the answers are read: a large request is more than a
	// socket buffers while no one reads. A server that closes the
	// connection may do so before it has read the whole request: then
	// the write fails, as it should.
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(request)
		wrote <- err
	}()
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if !close && bytes.HasSuffix(got, endNoop) {
			if err := <-wrote; err != nil {
				t.Fatalf("%s: writing the request: %v", addr, err)
			}
			return got
		}
		if errors.Is(err, io.EOF) && close {
			return got
		}
		if err != nil {
			t.Fatalf("%s: %v after %.300q", addr, err, got)
		}
	}
}

// endNoop is the answer to the NOOP that ends an exchange: its request
// with the response magic.
var endNoop = func() []byte {
	b := req{op: opNoop, opaque: endOpaque}.bytes()
	b[0] = 0x81
	return b
}()

// maskCAS zeroes the cas of the hits in responses. memcached's cas unique
// is the version it gave the item when it was stored; enrichd's is the
// generation of its table set: both must be there (non-zero), their
// values legitimately differ. Every other cas must be 0 on both sides and
// is compared.
func maskCAS(t testing.TB, who string, resp []byte) []byte {
	t.Helper()
	out := bytes.Clone(resp)
	for _, p := range packets(t, out) {
		op, status := p[1], binary.BigEndian.Uint16(p[6:])
		if status == 0 && (op == opGet || op == opGetQ || op == opGetK || op == opGetKQ) {
			if binary.BigEndian.Uint64(p[16:]) == 0 {
				t.Errorf("%s: a hit without a cas: %q", who, p)
			}
			clear(p[16:24])
		}
	}
	return out
}

// TestBinaryLikeMemcached is the byte-for-byte comparison of the binary
// protocol: the same requests sent to enrichd and to a real memcached
// holding the same items get the same bytes back, cas values of hits
// masked (maskCAS); opaques are sent by the test and echoed by both.
func TestBinaryLikeMemcached(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	mirror(t, ours, real, "customers:42", "customers:7", "customers:9000")
	k42, k7, k9000, nope := []byte("customers:42"), []byte("customers:7"), []byte("customers:9000"), []byte("customers:nope")
	for _, tc := range []struct {
		name  string
		req   []byte
		close bool // the server closes the connection after answering
	}{
		// What Dalli 3.0's get_multi sends: GETKQ per key (opaque 0), NOOP.
		{"dalli get_multi", reqs(req{op: opGetKQ, key: k42}, req{op: opGetKQ, key: nope}, req{op: opGetKQ, key: k9000},
			req{op: opGetKQ, key: k7}, req{op: opNoop}), false},
		// What Dalli's get sends.
		{"dalli get", reqs(req{op: opGet, key: k42}, req{op: opGet, key: nope}), false},
		{"get family", reqs(req{op: opGet, key: k7, opaque: 1}, req{op: opGetK, key: k42, opaque: 2}, req{op: opGetK, key: nope, opaque: 3},
			req{op: opGetQ, key: nope, opaque: 4}, req{op: opGetQ, key: k9000, opaque: 5}, req{op: opGetKQ, key: nope, opaque: 6},
			req{op: opGet, key: []byte("customers:42 with space\x00"), opaque: 7}), false},
		{"noop", reqs(req{op: opNoop, opaque: 9}), false},
		{"unknown opcodes", reqs(req{op: 0x50, value: []byte("body"), opaque: 10}, req{op: 0x20, opaque: 11},
			req{op: 0x21, key: []byte("PLAIN"), value: []byte("\x00user\x00pass"), opaque: 12}, req{op: 0x1b, opaque: 13},
			req{op: 0xff, opaque: 14}), false},
		{"stat unknown group", reqs(req{op: opStat, key: []byte("nonesuch"), opaque: 15}), false},
		{"quit", reqs(req{op: opGet, key: k42}, req{op: opQuit, opaque: 16}, req{op: opNoop}), true},
		{"quitq", reqs(req{op: opGet, key: k42}, req{op: opQuitQ, opaque: 17}, req{op: opNoop}), true},
		{"key too long", reqs(req{op: opGet, key: bytes.Repeat([]byte("k"), 251), opaque: 18}, req{op: opNoop}), true},
		{"get without key", reqs(req{op: opGet, opaque: 19}, req{op: opNoop}), true},
		{"get with extras", reqs(req{op: opGet, key: k42, extras: []byte{0, 0, 0, 0}, opaque: 20}, req{op: opNoop}), true},
		{"get with value", reqs(req{op: opGetK, key: k42, value: []byte("v"), opaque: 21}, req{op: opNoop}), true},
		{"noop with body", reqs(req{op: opNoop, value: []byte("x"), opaque: 22}, req{op: opNoop}), true},
		{"version with key", reqs(req{op: opVersion, key: []byte("x"), opaque: 23}, req{op: opNoop}), true},
		{"set without extras", reqs(req{op: opSet, key: k42, value: []byte("x"), opaque: 24}, req{op: opNoop}), true},
		{"delete with value", reqs(req{op: opDelete, key: k42, value: []byte("x"), opaque: 25}, req{op: opNoop}), true},
		{"key beyond body", reqs(req{op: opGet, key: []byte("abc"), bodyAdd: -2, opaque: 26}, req{op: opNoop}), true},
		{"bad magic", append(reqs(req{op: opNoop, opaque: 27}), append([]byte{0x81}, make([]byte, 23)...)...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := maskCAS(t, "enrichd", exchangeBin(t, ours, tc.req, tc.close))
			b := maskCAS(t, "memcached", exchangeBin(t, real, tc.req, tc.close))
			if !bytes.Equal(a, b) {
				t.Errorf("enrichd and memcached differ:\nenrichd   %q\nmemcached %q", a, b)
			}
			if len(packets(t, a)) < 1 {
				t.Errorf("no answer")
			}
		})
	}
}

// TestBinaryVersion checks VERSION against memcached's: the same header
// but for the body length, and a body that libmemcached parses the same
// way (major.minor.micro first). The bodies differ by design: enrichd
// names itself after the version number.
func TestBinaryVersion(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	a := exchangeBin(t, ours, req{op: opVersion, opaque: 5}.bytes(), false)
	b := exchangeBin(t, real, req{op: opVersion, opaque: 5}.bytes(), false)
	pa, pb := packets(t, a)[0], packets(t, b)[0]
	if !bytes.Equal(pa[:8], pb[:8]) || !bytes.Equal(pa[12:24], pb[12:24]) {
		t.Errorf("headers differ:\nenrichd   %q\nmemcached %q", pa[:24], pb[:24])
	}
	if string(pa[24:]) != wantVersion {
		t.Errorf("enrichd's version %q, want %q", pa[24:], wantVersion)
	}
	re := regexp.MustCompile(`^[1-9][0-9]{0,2}\.[0-9]{1,3}\.[0-9]{1,3}`)
	for _, v := range [][]byte{pa[24:], pb[24:]} {
		if !re.Match(v) || len(v) >= 32 {
			t.Errorf("version %q: not major.minor.micro first, or 32 bytes or more (libmemcached's buffer)", v)
		}
	}
}

// TestBinaryStat checks STAT against memcached's: the same framing (one
// packet per statistic, opcode and opaque echoed, then an empty packet),
// and the statistics Dalli's and libmemcached's users read under the same
// names.
func TestBinaryStat(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	read := func(addr string) map[string]string {
		stats := map[string]string{}
		ps := packets(t, exchangeBin(t, addr, req{op: opStat, opaque: 3}.bytes(), false))
		for i, p := range ps[:len(ps)-1] {
			klen := int(binary.BigEndian.Uint16(p[2:]))
			if p[0] != 0x81 || p[1] != opStat || p[4] != 0 || binary.BigEndian.Uint16(p[6:]) != 0 ||
				binary.BigEndian.Uint32(p[12:]) != 3 || binary.BigEndian.Uint64(p[16:]) != 0 {
				t.Fatalf("%s: packet %d: %q", addr, i, p)
			}
			if klen == 0 {
				if i != len(ps)-2 {
					t.Fatalf("%s: an empty packet before the end", addr)
				}
				continue
			}
			stats[string(p[24:24+klen])] = string(p[24+klen:])
		}
		if last := ps[len(ps)-2]; len(last) != 24 {
			t.Errorf("%s: does not end with an empty packet: %q", addr, last)
		}
		return stats
	}
	o, r := read(ours), read(real)
	for _, name := range []string{"pid", "uptime", "time", "version", "max_connections", "curr_connections", "total_connections",
		"rejected_connections", "cmd_get", "get_hits", "get_misses"} {
		if _, ok := r[name]; !ok {
			t.Errorf("memcached has no %s", name)
		}
		if _, ok := o[name]; !ok {
			t.Errorf("enrichd has no %s", name)
		}
	}
	if o["version"] != wantVersion {
		t.Errorf("version %q", o["version"])
	}
}

// TestBinaryWritesRefused compares enrichd's answer to every write opcode
// with the one write refusal memcached has: FLUSH on a memcached started
// with -F (flush_all disabled). The bytes are the same but for the opcode
// and opaque each answer echoes; the value of the write is read, and the
// connection stays in step (the GETK after the writes is answered as a
// real memcached answers it).
func TestBinaryWritesRefused(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	noflush := startMemcached(t, "-F")
	mirror(t, ours, real, "customers:42")
	k := []byte("customers:42")
	for _, op := range []uint8{opFlush, opFlushQ} {
		r := req{op: op, opaque: 77}.bytes()
		a, b := exchangeBin(t, ours, r, false), exchangeBin(t, noflush, r, false)
		if !bytes.Equal(a, b) {
			t.Errorf("flush %#x:\nenrichd       %q\nmemcached -F  %q", op, a, b)
		}
	}
	refusal := packets(t, exchangeBin(t, noflush, req{op: opFlush}.bytes(), false))[0]
	writes := []req{
		{op: opSet, extras: make([]byte, 8), key: k, value: bytes.Repeat([]byte("v"), 100000)},
		{op: opAdd, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opReplace, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opSetQ, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opAddQ, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opReplaceQ, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opDelete, key: k}, {op: opDeleteQ, key: k},
		{op: opIncr, extras: make([]byte, 20), key: k}, {op: opDecr, extras: make([]byte, 20), key: k},
		{op: opIncrQ, extras: make([]byte, 20), key: k}, {op: opDecrQ, extras: make([]byte, 20), key: k},
		{op: opFlush}, {op: opFlush, extras: make([]byte, 4)}, {op: opFlushQ},
		{op: opAppend, key: k, value: []byte("x")}, {op: opPrepend, key: k, value: []byte("x")},
		{op: opAppendQ, key: k, value: []byte("x")}, {op: opPrependQ, key: k, value: []byte("x")},
		{op: opTouch, extras: make([]byte, 4), key: k}, {op: opGat, extras: make([]byte, 4), key: k},
		{op: opGatQ, extras: make([]byte, 4), key: k}, {op: opGatK, extras: make([]byte, 4), key: k},
		{op: opGatKQ, extras: make([]byte, 4), key: k},
	}
	var request, want []byte
	for i, w := range writes {
		w.opaque = uint32(1000 + i)
		request = append(request, w.bytes()...)
		p := bytes.Clone(refusal)
		p[1] = w.op
		binary.BigEndian.PutUint32(p[12:], w.opaque)
		want = append(want, p...)
	}
	getk := req{op: opGetK, key: k, opaque: 5000}.bytes()
	got := maskCAS(t, "enrichd", exchangeBin(t, ours, append(request, getk...), false))
	want = append(want, maskCAS(t, "memcached", exchangeBin(t, real, getk, false))...)
	if !bytes.Equal(got, want) {
		ps, ws := packets(t, got), packets(t, want)
		for i := range max(len(ps), len(ws)) {
			if i >= len(ps) || i >= len(ws) || !bytes.Equal(ps[i], ws[i]) {
				t.Fatalf("answer %d differs (%d answers, want %d):\nenrichd %.200q\nwant    %.200q", i, len(ps), len(ws),
					ps[min(i, len(ps)-1)], ws[min(i, len(ws)-1)])
			}
		}
	}
}
