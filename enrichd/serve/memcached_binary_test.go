package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
)

// textValue is what the text protocol answers for key.
func textValue(t *testing.T, addr, key string) []byte {
	t.Helper()
	it, err := memcache.New(addr).Get(key)
	if err != nil {
		t.Fatalf("text get %s: %v", key, err)
	}
	return it.Value
}

// TestMemcachedBinaryGets pipelines what Dalli's get_multi sends (GETKQ
// per key, then NOOP) and the other reads.
func TestMemcachedBinaryGets(t *testing.T) {
	s, addr := startMC(t, MemcachedOptions{})
	v42, vPair := textValue(t, addr, "customers:42"), textValue(t, addr, "pairs:eu,1")
	gen := func() uint64 {
		snap := s.set.Acquire()
		defer snap.Release()
		return snap.Generation()
	}()
	c, r := dialMC(t, addr)
	var req []byte
	for _, q := range []binReq{
		{op: opGetKQ, key: []byte("customers:42"), opaque: 1},
		{op: opGetKQ, key: []byte("customers:nope"), opaque: 2},
		{op: opGetKQ, key: []byte("pairs:eu,1"), opaque: 3},
		{op: opNoop, opaque: 4},
		{op: opGet, key: []byte("customers:42"), opaque: 5},
		{op: opGet, key: []byte("customers:nope"), opaque: 6},
		{op: opGetK, key: []byte("customers:nope"), opaque: 7},
		{op: opGetQ, key: []byte("customers:nope"), opaque: 8},
		{op: opGetQ, key: []byte("customers:42"), opaque: 9},
		{op: opVersion, opaque: 10},
	} {
		req = append(req, q.bytes()...)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	want := []binRes{
		{op: opGetKQ, extras: []byte{0, 0, 0, 0}, key: []byte("customers:42"), value: v42, opaque: 1, cas: gen},
		{op: opGetKQ, extras: []byte{0, 0, 0, 0}, key: []byte("pairs:eu,1"), value: vPair, opaque: 3, cas: gen},
		{op: opNoop, opaque: 4},
		{op: opGet, extras: []byte{0, 0, 0, 0}, value: v42, opaque: 5, cas: gen},
		{op: opGet, status: statusNotFound, value: []byte("Not found"), opaque: 6},
		{op: opGetK, status: statusNotFound, key: []byte("customers:nope"), opaque: 7},
		{op: opGetQ, extras: []byte{0, 0, 0, 0}, value: v42, opaque: 9, cas: gen},
		{op: opVersion, value: []byte(MemcachedVersion), opaque: 10},
	}
	for i, w := range want {
		got, err := readBinRes(r)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		w.magic = binResMagic
		if !sameRes(got, w) {
			t.Errorf("response %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	if st := s.Stats(); st.Requests[ProtoBinary] != 10 || st.Hits < 4 || st.Misses < 4 {
		t.Errorf("stats %+v", st)
	}
}

func sameRes(a, b binRes) bool {
	return a.magic == b.magic && a.op == b.op && a.datatype == b.datatype && a.status == b.status &&
		bytes.Equal(a.extras, b.extras) && bytes.Equal(a.key, b.key) && bytes.Equal(a.value, b.value) &&
		a.opaque == b.opaque && a.cas == b.cas
}

// TestMemcachedBinaryWrites checks that every write opcode, quiet or not,
// is refused with memcached's answer to a disabled flush, its value read,
// and that the connection stays in step.
func TestMemcachedBinaryWrites(t *testing.T) {
	s, addr := startMC(t, MemcachedOptions{})
	c, r := dialMC(t, addr)
	k := []byte("customers:42")
	val := []byte(strings.Repeat("v", 70000)) // more than the read buffer
	writes := []binReq{
		{op: opSet, extras: make([]byte, 8), key: k, value: val},
		{op: opAdd, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opReplace, extras: make([]byte, 8), key: k},
		{op: opSetQ, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opAddQ, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opReplaceQ, extras: make([]byte, 8), key: k, value: []byte("x")},
		{op: opDelete, key: k},
		{op: opDeleteQ, key: k},
		{op: opIncr, extras: make([]byte, 20), key: k},
		{op: opDecr, extras: make([]byte, 20), key: k},
		{op: opIncrQ, extras: make([]byte, 20), key: k},
		{op: opDecrQ, extras: make([]byte, 20), key: k},
		{op: opFlush},
		{op: opFlush, extras: make([]byte, 4)},
		{op: opFlushQ},
		{op: opAppend, key: k, value: []byte("x")},
		{op: opPrepend, key: k, value: []byte("x")},
		{op: opAppendQ, key: k, value: []byte("x")},
		{op: opPrependQ, key: k, value: []byte("x")},
		{op: opTouch, extras: make([]byte, 4), key: k},
		{op: opGat, extras: make([]byte, 4), key: k},
		{op: opGatQ, extras: make([]byte, 4), key: k},
		{op: opGatK, extras: make([]byte, 4), key: k},
		{op: opGatKQ, extras: make([]byte, 4), key: k},
	}
	var req []byte
	for i, w := range writes {
		w.opaque = uint32(100 + i)
		req = append(req, w.bytes()...)
	}
	// An unknown opcode (and a SASL one: this memcached has no SASL) is
	// answered "Unknown command"; its body is skipped.
	req = append(req, binReq{op: 0x50, value: []byte("body"), opaque: 200}.bytes()...)
	req = append(req, binReq{op: 0x21, key: []byte("PLAIN"), value: []byte("\x00u\x00p"), opaque: 201}.bytes()...)
	req = append(req, binReq{op: opGetK, key: k, opaque: 300}.bytes()...)
	// Written as the answers are read: the request is larger than what a
	// socket buffers while no one reads the answers.
	go func() {
		if _, err := c.Write(req); err != nil {
			t.Error(err)
		}
	}()
	for i, w := range writes {
		got, err := readBinRes(r)
		if err != nil {
			t.Fatalf("write %#x: %v", w.op, err)
		}
		want := binRes{magic: binResMagic, op: w.op, status: statusAuthError, value: []byte("Auth failure."), opaque: uint32(100 + i)}
		if !sameRes(got, want) {
			t.Errorf("write %#x:\n got %+v\nwant %+v", w.op, got, want)
		}
	}
	for _, op := range []uint8{0x50, 0x21} {
		got, err := readBinRes(r)
		if err != nil || got.op != op || got.status != statusUnknownCmd || string(got.value) != "Unknown command" {
			t.Errorf("opcode %#x: %+v %v", op, got, err)
		}
	}
	got, err := readBinRes(r)
	if err != nil || got.status != 0 || got.opaque != 300 || string(got.key) != "customers:42" {
		t.Errorf("get after the writes: %+v %v", got, err)
	}
	if st := s.Stats(); st.Refused[ProtoBinary] != uint64(len(writes)) {
		t.Errorf("%d writes refused, want %d", st.Refused[ProtoBinary], len(writes))
	}
}

// TestMemcachedBinaryStat reads STAT as Dalli's stats does.
func TestMemcachedBinaryStat(t *testing.T) {
	_, addr := startMC(t, MemcachedOptions{})
	c, r := dialMC(t, addr)
	var req []byte
	for _, q := range []binReq{{op: opStat, opaque: 7}, {op: opStat, key: []byte("items"), opaque: 8}, {op: opStat, key: []byte("reset"), opaque: 9}} {
		req = append(req, q.bytes()...)
	}
	send(t, c, req)
	stats := map[string]string{}
	for {
		res, err := readBinRes(r)
		if err != nil {
			t.Fatal(err)
		}
		if res.op != opStat || res.status != 0 || res.opaque != 7 || len(res.extras) != 0 {
			t.Fatalf("%+v", res)
		}
		if len(res.key) == 0 {
			break
		}
		stats[string(res.key)] = string(res.value)
	}
	for _, k := range []string{"pid", "version", "curr_connections", "get_hits", "binary_requests", "tables"} {
		if _, ok := stats[k]; !ok {
			t.Errorf("no %s in %v", k, stats)
		}
	}
	if _, ok := stats["idle_kicks"]; ok {
		t.Error("idle_kicks without an idle timeout")
	}
	if stats["version"] != MemcachedVersion || stats["tables"] != "2" {
		t.Errorf("%v", stats)
	}
	res, err := readBinRes(r)
	if err != nil || res.opaque != 8 || len(res.key) != 0 || len(res.value) != 0 {
		t.Errorf("STAT items: %+v %v", res, err)
	}
	res, err = readBinRes(r)
	if err != nil || res.opaque != 9 || res.status != statusNotFound || string(res.value) != "Not found" {
		t.Errorf("STAT reset: %+v %v", res, err)
	}
	c2, r2 := dialMC(t, addr)
	send(t, c2, []byte("stats items\r\nstats reset\r\n"))
	for _, want := range []string{"END\r\n", "ERROR\r\n"} {
		if l, err := r2.ReadString('\n'); l != want {
			t.Errorf("text stats: %q %v, want %q", l, err, want)
		}
	}
}

// TestMemcachedBinaryClose checks the requests after which memcached
// closes the connection, and what it answers first.
func TestMemcachedBinaryClose(t *testing.T) {
	_, addr := startMC(t, MemcachedOptions{})
	invalid := &binRes{magic: binResMagic, status: statusInvalid, value: []byte("Invalid arguments")}
	unknown := &binRes{magic: binResMagic, status: statusUnknownCmd, value: []byte("Unknown command")}
	for _, tc := range []struct {
		name string
		req  []byte
		want *binRes // nil: closed without an answer
	}{
		{"quit", binReq{op: opQuit}.bytes(), &binRes{magic: binResMagic, op: opQuit}},
		{"quitq", binReq{op: opQuitQ}.bytes(), nil},
		{"key too long", binReq{op: opGet, key: bytes.Repeat([]byte("k"), 251)}.bytes(), invalid},
		{"get without key", binReq{op: opGet}.bytes(), invalid},
		{"get with extras", binReq{op: opGet, extras: []byte{1, 2, 3, 4}, key: []byte("k")}.bytes(), invalid},
		{"noop with body", binReq{op: opNoop, value: []byte("x")}.bytes(), invalid},
		{"set without extras", binReq{op: opSet, key: []byte("k"), value: []byte("x")}.bytes(), invalid},
		{"key beyond body", binReq{op: opGet, key: []byte("abc"), bodyAdd: -2}.bytes(), unknown},
		{"bad magic", append(binReq{op: opNoop}.bytes(), append([]byte{0x81}, make([]byte, 23)...)...), &binRes{magic: binResMagic}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := dialMC(t, addr)
			// A NOOP follows: it must not be answered.
			send(t, c, append(tc.req, binReq{op: opNoop}.bytes()...))
			if tc.want != nil {
				got, err := readBinRes(r)
				tc.want.op = tc.req[1]
				if err != nil || !sameRes(got, *tc.want) {
					t.Errorf("got %+v %v\nwant %+v", got, err, *tc.want)
				}
			}
			if b, err := r.ReadByte(); !errors.Is(err, io.EOF) {
				t.Errorf("connection still open: read %#x %v", b, err)
			}
		})
	}
}

// TestMemcachedProtocolPerConnection checks that the first byte picks
// the protocol for the connection's life: a text command on a binary
// connection closes it, a 0x80 byte on a text connection is text.
func TestMemcachedProtocolPerConnection(t *testing.T) {
	_, addr := startMC(t, MemcachedOptions{})
	c, r := dialMC(t, addr)
	send(t, c, append(binReq{op: opNoop, opaque: 1}.bytes(), "version\r\nversion\r\nversion\r\n"...))
	if res, err := readBinRes(r); err != nil || res.op != opNoop || res.opaque != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("text on a binary connection: %v", err)
	}
	c2, r2 := dialMC(t, addr)
	send(t, c2, []byte("version\r\n\x80\r\nversion\r\n"))
	for _, want := range []string{"VERSION " + MemcachedVersion + "\r\n", "ERROR\r\n", "VERSION " + MemcachedVersion + "\r\n"} {
		if l, err := r2.ReadString('\n'); l != want {
			t.Errorf("%q %v, want %q", l, err, want)
		}
	}
}

// TestMemcachedBinaryEOF checks that a request cut short ends the
// connection without an answer.
func TestMemcachedBinaryEOF(t *testing.T) {
	_, addr := startMC(t, MemcachedOptions{})
	for _, cut := range []int{10, 24, 30} {
		c, r := dialMC(t, addr)
		req := binReq{op: opGet, key: []byte("customers:42")}.bytes()
		send(t, c, req[:cut])
		must(t, c.(*net.TCPConn).CloseWrite())
		if b, err := bufio.NewReader(r).ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("cut at %d: read %#x %v", cut, b, err)
		}
	}
}
