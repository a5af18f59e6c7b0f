package serve

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// The memcached listener reads untrusted bytes: each protocol's parser is
// fuzzed through a whole connection, which must end (at the end of the
// input at the latest) without a panic and with well-framed answers.

// runConn serves one connection that reads in and returns what it wrote.
func runConn(s *Memcached, in []byte) []byte {
	var out bytes.Buffer
	c := s.newConn(bytes.NewReader(in), &out)
	c.serve()
	return out.Bytes()
}

// FuzzMemcachedText fuzzes the text protocol: every answer is a line or a
// data block ending in "\r\n".
func FuzzMemcachedText(f *testing.F) {
	s := NewMemcached(mcSet(f), MemcachedOptions{DefaultTable: "customers"})
	for _, seed := range []string{
		"get customers:1 2 customers:nope\r\ngets pairs:eu,1\r\n",
		"set k 0 0 5 noreply\r\nhello\r\nget 7\r\n",
		"cas k 0 0 1 5\r\nx\r\ndelete k 0 noreply\r\nincr k 1\r\ndecr k x noreply\r\n",
		"touch k 10\r\ngat 10 k\r\nflush_all 0 noreply\r\nverbosity 1\r\nstats\r\nstats items\r\nversion\r\n",
		"set k 0 0 -1\r\nset k 0 0 99999999999\r\nbget 1\r\n\r\n \r\nquit\r\nget 1\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 0 && in[0] == binReqMagic {
			return // FuzzMemcachedBinary
		}
		out := runConn(s, in)
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\r\n")) {
			t.Fatalf("answer does not end a line: %q", out)
		}
	})
}

// FuzzMemcachedMeta fuzzes an mg command's key and flags: it gets one
// answer (or none with q), and the mn after it is answered.
func FuzzMemcachedMeta(f *testing.F) {
	s := NewMemcached(mcSet(f), MemcachedOptions{})
	for _, seed := range []string{
		"customers:1 v k c f s t O123 q", "customers:nope v k O9 q", "Y3VzdG9tZXJzOjE= b k v",
		"customers:1 v v", "customers:1 T30 N1 R5 F1 C2 MS J1 D1 I u P L", "customers:1 O" + string(bytes.Repeat([]byte("x"), 40)),
		"pairs:eu,1 h l", "!!! b", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if bytes.ContainsAny(args, "\r\n") {
			return // more than one command
		}
		out := runConn(s, append(append([]byte("mg "), args...), "\r\nmn\r\n"...))
		if !bytes.HasSuffix(out, []byte("MN\r\n")) {
			t.Fatalf("mg %q: the mn after it is not answered: %q", args, out)
		}
	})
}

// FuzzMemcachedBinary fuzzes the binary protocol after a NOOP: every
// answer is a whole response packet.
func FuzzMemcachedBinary(f *testing.F) {
	s := NewMemcached(mcSet(f), MemcachedOptions{})
	var seed []byte
	for _, r := range []binReq{
		{op: opGetKQ, key: []byte("customers:1")}, {op: opGetK, key: []byte("nope")}, {op: opGet, key: []byte("pairs:eu,1")},
		{op: opSet, extras: make([]byte, 8), key: []byte("k"), value: []byte("v")}, {op: opStat}, {op: opVersion},
		{op: opFlush, extras: make([]byte, 4)}, {op: 0x50, value: []byte("x")}, {op: opQuitQ},
	} {
		seed = append(seed, r.bytes()...)
		f.Add(r.bytes())
	}
	f.Add(seed)
	f.Add(binReq{op: opGet, key: []byte("abc"), bodyAdd: -2}.bytes())
	noop := binReq{op: opNoop}.bytes()
	f.Fuzz(func(t *testing.T, in []byte) {
		out := runConn(s, append(noop[:len(noop):len(noop)], in...))
		for p := out; len(p) > 0; {
			if len(p) < binHdrLen || p[0] != binResMagic {
				t.Fatalf("not a response packet at %d: %q", len(out)-len(p), p)
			}
			n := binHdrLen + int(binary.BigEndian.Uint32(p[8:]))
			if klen, elen := int(binary.BigEndian.Uint16(p[2:])), int(p[4]); klen+elen > n-binHdrLen || n > len(p) {
				t.Fatalf("bad lengths at %d: %q", len(out)-len(p), p)
			}
			p = p[n:]
		}
	})
}
