package serve

import (
	"encoding/binary"
	"io"
)

// The binary protocol, as memcached 1.6 answers it (proto_bin.c,
// doc/protocol-binary.txt). A request is a 24-byte header (magic 0x80,
// opcode, key length, extras length, data type, vbucket, body length,
// opaque, cas), then the extras, the key and the value; every response
// echoes the opcode and the opaque.
//
// GET, GETQ, GETK and GETKQ answer a hit with the flags (0) as extras, the
// key for GETK and GETKQ, the value, and the table set's generation as
// the cas; a miss with status 0x0001 and "Not found" (GET) or the key
// (GETK), and with nothing for GETQ and GETKQ, which a client ends with a
// NOOP. NOOP, VERSION, STAT (empty key: the listener's statistics; one of
// memcached's group names: none; another name: "Not found") and QUIT
// work; QUITQ closes without an answer.
//
// memcached has no read-only mode. The one write it refuses by
// configuration, FLUSH on a server started with -F (flush_all disabled),
// it answers with status 0x0020 and the body "Auth failure.", and keeps
// the connection: every write opcode (SET, ADD, REPLACE, DELETE, INCR,
// DECR, FLUSH, APPEND, PREPEND, TOUCH, GAT, GATK and their quiet forms)
// is answered that way here, its value read and dropped. Like memcached,
// a quiet write still gets its error.
//
// Malformed requests are answered as memcached answers them: a request
// whose key and extras do not fit its body gets 0x0081 and the connection
// is closed; a key longer than 250 bytes, or a known opcode with extras,
// key or body of the wrong size, gets 0x0004 "Invalid arguments" and the
// connection is closed; a header without the request magic closes the
// connection. Unknown opcodes (the SASL ones included, as with memcached
// built without SASL) get 0x0081 "Unknown command" and their body is
// skipped. (memcached 1.6.18 skips the whole body length again after
// reading the key and extras of an unknown opcode, and so eats the start
// of the next request; the listener skips only what is left.)

const (
	binReqMagic = 0x80
	binResMagic = 0x81
	binHdrLen   = 24
)

// Opcodes.
const (
	opGet      = 0x00
	opSet      = 0x01
	opAdd      = 0x02
	opReplace  = 0x03
	opDelete   = 0x04
	opIncr     = 0x05
	opDecr     = 0x06
	opQuit     = 0x07
	opFlush    = 0x08
	opGetQ     = 0x09
	opNoop     = 0x0a
	opVersion  = 0x0b
	opGetK     = 0x0c
	opGetKQ    = 0x0d
	opAppend   = 0x0e
	opPrepend  = 0x0f
	opStat     = 0x10
	opSetQ     = 0x11
	opAddQ     = 0x12
	opReplaceQ = 0x13
	opDeleteQ  = 0x14
	opIncrQ    = 0x15
	opDecrQ    = 0x16
	opQuitQ    = 0x17
	opFlushQ   = 0x18
	opAppendQ  = 0x19
	opPrependQ = 0x1a
	opTouch    = 0x1c
	opGat      = 0x1d
	opGatQ     = 0x1e
	opGatK     = 0x23
	opGatKQ    = 0x24
)

// Response statuses.
const (
	binStatusOK      = 0x0000
	statusNotFound   = 0x0001
	statusInvalid    = 0x0004
	statusAuthError  = 0x0020
	statusUnknownCmd = 0x0081
)

// binHeader is a request header.
type binHeader struct {
	opcode  uint8
	extlen  uint8
	keylen  uint16
	bodylen uint32
	opaque  uint32
}

// valueLen is the length of the value that follows the extras and key.
func (h *binHeader) valueLen() uint32 { return h.bodylen - uint32(h.keylen) - uint32(h.extlen) }

// binStep reads and answers one binary request. It returns false when the
// connection must close.
func (c *mcConn) binStep() bool {
	hdr, err := c.r.Peek(binHdrLen)
	if err != nil {
		if err != io.EOF || len(hdr) > 0 {
			c.fail(err)
		}
		return false
	}
	if hdr[0] != binReqMagic {
		return false
	}
	c.count(ProtoBinary)
	h := &c.req
	*h = binHeader{opcode: hdr[1], keylen: binary.BigEndian.Uint16(hdr[2:]), extlen: hdr[4],
		bodylen: binary.BigEndian.Uint32(hdr[8:]), opaque: binary.BigEndian.Uint32(hdr[12:])}
	if _, err := c.r.Discard(binHdrLen); err != nil {
		c.fail(err)
		return false
	}
	if uint32(h.keylen) > h.bodylen || uint32(h.keylen)+uint32(h.extlen) > h.bodylen {
		c.binError(statusUnknownCmd, "Unknown command")
		return false
	}
	if h.keylen > MaxKeyLength {
		c.binError(statusInvalid, "Invalid arguments")
		return false
	}
	// The extras carry nothing the listener uses: flags and expiry of the
	// writes it refuses, the TTL of touches.
	if _, err := c.r.Discard(int(h.extlen)); err != nil {
		c.fail(err)
		return false
	}
	key := c.bkey[:h.keylen]
	if _, err := io.ReadFull(c.r, key); err != nil {
		c.fail(err)
		return false
	}
	ext, klen, vlen := h.extlen, h.keylen, h.valueLen()
	noBody := ext == 0 && klen == 0 && vlen == 0
	switch h.opcode {
	case opGet, opGetQ, opGetK, opGetKQ:
		if ext != 0 || klen == 0 || vlen != 0 {
			return c.binInvalid()
		}
		c.binGet(key)
	case opNoop:
		if !noBody {
			return c.binInvalid()
		}
		c.binWrite(binStatusOK, nil, nil, nil, 0)
	case opVersion:
		if !noBody {
			return c.binInvalid()
		}
		c.binWrite(binStatusOK, nil, nil, sbytes(c.s.opts.Version), 0)
	case opQuit, opQuitQ:
		if !noBody {
			return c.binInvalid()
		}
		if h.opcode == opQuit {
			c.binWrite(binStatusOK, nil, nil, nil, 0)
		}
		return false
	case opStat:
		if ext != 0 {
			return c.binInvalid()
		}
		if !c.skip(vlen) {
			return false
		}
		c.binStats(key)
	case opSet, opAdd, opReplace, opSetQ, opAddQ, opReplaceQ:
		if ext != 8 || klen == 0 {
			return c.binInvalid()
		}
		return c.binRefuse(vlen)
	case opDelete, opDeleteQ:
		if ext != 0 || klen == 0 || vlen != 0 {
			return c.binInvalid()
		}
		return c.binRefuse(vlen)
	case opIncr, opDecr, opIncrQ, opDecrQ:
		if ext != 20 || klen == 0 || vlen != 0 {
			return c.binInvalid()
		}
		return c.binRefuse(vlen)
	case opAppend, opPrepend, opAppendQ, opPrependQ:
		if ext != 0 || klen == 0 {
			return c.binInvalid()
		}
		return c.binRefuse(vlen)
	case opFlush, opFlushQ:
		if klen != 0 || vlen != 0 || ext != 0 && ext != 4 {
			return c.binInvalid()
		}
		return c.binRefuse(vlen)
	case opTouch, opGat, opGatQ, opGatK, opGatKQ:
		if ext != 4 || klen == 0 {
			return c.binInvalid()
		}
		return c.binRefuse(vlen)
	default:
		if !c.skip(vlen) {
			return false
		}
		c.binError(statusUnknownCmd, "Unknown command")
	}
	return true
}

// skip reads and drops n bytes.
func (c *mcConn) skip(n uint32) bool {
	if _, err := c.r.Discard(int(n)); err != nil {
		c.fail(err)
		return false
	}
	return true
}

// binInvalid answers a malformed request as memcached does, and ends the
// connection.
func (c *mcConn) binInvalid() bool {
	c.binError(statusInvalid, "Invalid arguments")
	return false
}

// binRefuse answers a write: the value is read and dropped, the refusal is
// memcached's for a disabled flush (see the top of the file).
func (c *mcConn) binRefuse(vlen uint32) bool {
	c.refuse(ProtoBinary)
	if !c.skip(vlen) {
		return false
	}
	c.binError(statusAuthError, "Auth failure.")
	return true
}

func (c *mcConn) binError(status uint16, msg string) {
	c.binWrite(status, nil, nil, sbytes(msg), 0)
}

// binGet answers GET, GETQ, GETK and GETKQ.
func (c *mcConn) binGet(key []byte) {
	op := c.req.opcode
	withKey := op == opGetK || op == opGetKQ
	quiet := op == opGetQ || op == opGetKQ
	snap := c.s.set.Acquire()
	defer snap.Release()
	if !c.lookup(snap, key) {
		switch {
		case quiet:
		case withKey:
			c.binWrite(statusNotFound, nil, key, nil, 0)
		default:
			c.binWrite(statusNotFound, nil, nil, sbytes("Not found"), 0)
		}
		return
	}
	var flags [4]byte // client flags: 0
	if !withKey {
		key = nil
	}
	c.binWrite(binStatusOK, flags[:], key, c.val, snap.Generation())
}

// binStats answers STAT: every statistic for an empty key, none (only the
// terminating packet) for a group name, "Not found" for anything else.
func (c *mcConn) binStats(group []byte) {
	switch {
	case len(group) == 0:
		c.eachStat(func(name string, v []byte) {
			c.binWrite(binStatusOK, nil, sbytes(name), v, 0)
		})
	case !statGroups[bstr(group)]:
		c.binWrite(statusNotFound, nil, nil, sbytes("Not found"), 0)
		return
	}
	c.binWrite(binStatusOK, nil, nil, nil, 0)
}

// binWrite writes a response to the request in c.req.
func (c *mcConn) binWrite(status uint16, extras, key, value []byte, cas uint64) {
	var h [binHdrLen]byte
	h[0] = binResMagic
	h[1] = c.req.opcode
	binary.BigEndian.PutUint16(h[2:], uint16(len(key)))
	h[4] = uint8(len(extras))
	binary.BigEndian.PutUint16(h[6:], status)
	binary.BigEndian.PutUint32(h[8:], uint32(len(extras)+len(key)+len(value)))
	binary.BigEndian.PutUint32(h[12:], c.req.opaque)
	binary.BigEndian.PutUint64(h[16:], cas)
	c.w.Write(h[:])
	c.w.Write(extras)
	c.w.Write(key)
	c.w.Write(value)
}
