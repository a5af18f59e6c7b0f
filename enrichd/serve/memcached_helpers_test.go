package serve

import (
	"bufio"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/tables"
)

// mcSet builds the customers (1000 rows) and pairs tables, without the
// city MMDB that testSet links, so that the protocol tests and fuzz
// targets need no fetched data.
func mcSet(t testing.TB) *tables.Set {
	t.Helper()
	dir := t.TempDir()
	if _, err := compile.File(&custSource{n: 1000}, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(&pairSource{}, filepath.Join(dir, "pairs.lut"), compile.Options{Key: []string{"region", "id"}}); err != nil {
		t.Fatal(err)
	}
	set, err := tables.Open(dir, tables.Options{DataVerify: tables.DataVerifyNone, NoWatch: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

// startMC serves mcSet on a fresh 127.0.0.1 port.
func startMC(t testing.TB, opts MemcachedOptions) (*Memcached, string) {
	t.Helper()
	return startMemcachedOn(t, NewMemcached(mcSet(t), opts))
}

// dialMC connects to addr with a 5 s deadline for the whole exchange.
func dialMC(t testing.TB, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	must(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	return c, bufio.NewReader(c)
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// send writes b to c in full.
func send(t testing.TB, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// binReq is a binary protocol request.
type binReq struct {
	op                  uint8
	extras, key, value  []byte
	opaque              uint32
	cas                 uint64
	keylenOver, bodyAdd int // to build malformed headers
}

func (r binReq) bytes() []byte {
	b := make([]byte, 24, 24+len(r.extras)+len(r.key)+len(r.value))
	b[0] = 0x80
	b[1] = r.op
	binary.BigEndian.PutUint16(b[2:], uint16(len(r.key)+r.keylenOver))
	b[4] = uint8(len(r.extras))
	binary.BigEndian.PutUint32(b[8:], uint32(len(r.extras)+len(r.key)+len(r.value)+r.bodyAdd))
	binary.BigEndian.PutUint32(b[12:], r.opaque)
	binary.BigEndian.PutUint64(b[16:], r.cas)
	b = append(b, r.extras...)
	b = append(b, r.key...)
	return append(b, r.value...)
}

// binRes is a binary protocol response.
type binRes struct {
	magic, op, datatype uint8
	status              uint16
	extras, key, value  []byte
	opaque              uint32
	cas                 uint64
}

func readBinRes(r *bufio.Reader) (binRes, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return binRes{}, err
	}
	res := binRes{magic: h[0], op: h[1], datatype: h[5], status: binary.BigEndian.Uint16(h[6:]),
		opaque: binary.BigEndian.Uint32(h[12:]), cas: binary.BigEndian.Uint64(h[16:])}
	klen, elen, blen := int(binary.BigEndian.Uint16(h[2:])), int(h[4]), int(binary.BigEndian.Uint32(h[8:]))
	body := make([]byte, blen)
	if _, err := io.ReadFull(r, body); err != nil {
		return res, err
	}
	if elen+klen > blen {
		return res, io.ErrUnexpectedEOF
	}
	res.extras, res.key, res.value = body[:elen], body[elen:elen+klen], body[elen+klen:]
	return res, nil
}
