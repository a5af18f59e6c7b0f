package serve

import (
	"encoding/base64"
	"strconv"
)

// The meta commands of the text protocol, as memcached 1.6 answers them
// (proto_text.c, doc/protocol.txt "Meta Commands").
//
// mg KEY FLAGS...: a hit answers "VA size FLAGS\r\nvalue\r\n" with the v
// flag and "HD FLAGS" without it; a miss answers "EN" (with the O and k
// flags), or nothing with q. Returned flags come in the order they were
// asked: k (the key), c (the cas: the table set's generation), f (client
// flags: 0), s (the value's size), t (time to live: -1, never expires), O
// (the opaque token, echoed). b reads the key as base64. u (no LRU bump),
// R (recache: an item that never expires never wins it), P and L (proxy
// hints), and the flags memcached parses for other meta commands and
// ignores in mg (F, C, M, J, D, I) are accepted and change nothing. T and
// N would change the item (a new TTL, a vivified item): they are refused
// as every write is. h and l (hit before, last access) report what the
// listener does not keep: they are answered "CLIENT_ERROR invalid flag",
// as unknown flags are.
//
// mn answers "MN". ms, md and ma are writes: checked as memcached checks
// them (ms's data block read and dropped) and refused with
// "SERVER_ERROR read-only"; q does not hide it (meta commands always
// return errors). me (memcached's debug dump) is not served: "ERROR".

// Limits of memcached's meta commands (MFLAG_MAX_OPT_LENGTH and
// MFLAG_MAX_OPAQUE_LENGTH): a command line of more than 20 tokens, the
// terminal one included, or an O token longer than 32 bytes, is an error.
const (
	metaMaxTokens = 20 - 1
	metaMaxOpaque = 32
)

// metaFlags is what mg needs of its flags.
type metaFlags struct {
	value, quiet, binKey bool
	key                  []byte // decoded when binKey
}

// meta answers the meta command "m"+sub.
func (c *mcConn) meta(sub byte, line []byte) bool {
	toks := c.tokenize(line)
	switch sub {
	case 'g':
		c.mg(toks)
	case 'n':
		c.w.WriteString("MN\r\n")
	case 's':
		return c.ms(toks)
	case 'd', 'a':
		if len(toks) < 2 {
			c.w.WriteString("ERROR\r\n")
			return true
		}
		if len(toks[1]) > MaxKeyLength {
			c.w.WriteString("CLIENT_ERROR bad command line format\r\n")
			return true
		}
		c.refuse(ProtoMeta)
		c.w.WriteString(readOnly)
	default:
		c.w.WriteString("ERROR\r\n")
	}
	return true
}

// ms refuses "ms KEY DATALEN FLAGS..." after reading its data block.
func (c *mcConn) ms(toks [][]byte) bool {
	const bad = "CLIENT_ERROR bad command line format\r\n"
	switch {
	case len(toks) < 2:
		c.w.WriteString("ERROR\r\n")
		return true
	case len(toks[1]) > MaxKeyLength || len(toks) == 2:
		c.w.WriteString(bad)
		return true
	case len(toks) > metaMaxTokens:
		c.w.WriteString("CLIENT_ERROR options flags too long\r\n")
		return true
	}
	size, err := strconv.ParseInt(bstr(toks[2]), 10, 32)
	if err != nil || size < 0 {
		c.w.WriteString(bad)
		return true
	}
	c.refuse(ProtoMeta)
	end, ok := c.skipData(int(size))
	if !ok {
		return false
	}
	if !end {
		c.w.WriteString("CLIENT_ERROR bad data chunk\r\n")
		return true
	}
	c.w.WriteString(readOnly)
	return true
}

// mgFlags checks the flags of an mg command as memcached's
// _meta_flag_preparse does and returns the error line to answer instead,
// if any.
func (c *mcConn) mgFlags(toks [][]byte, f *metaFlags) string {
	var seen [128]bool
	// Like memcached, a malformed token does not stop the check: the
	// error reported is the last one named, or the generic one.
	errstr, hasErr := "", false
	write := false
	for _, t := range toks[2:] {
		o := t[0]
		if o >= 127 || seen[o] {
			return "CLIENT_ERROR duplicate flag\r\n"
		}
		seen[o] = true
		switch o {
		case 'b':
			if cap(c.dkey) < len(toks[1]) {
				c.dkey = make([]byte, len(toks[1]))
			}
			n, err := base64.StdEncoding.Decode(c.dkey[:cap(c.dkey)], toks[1])
			if err != nil || n == 0 {
				errstr, hasErr = "CLIENT_ERROR error decoding key\r\n", true
				break
			}
			f.binKey, f.key = true, c.dkey[:n]
		case 'N', 'T', 'R':
			if _, err := strconv.ParseInt(bstr(t[1:]), 10, 32); err != nil {
				errstr, hasErr = "CLIENT_ERROR bad token in command line format\r\n", true
			}
			write = write || o != 'R'
		case 'F':
			if _, err := strconv.ParseUint(bstr(t[1:]), 10, 32); err != nil {
				hasErr = true
			}
		case 'C':
			if _, err := strconv.ParseUint(bstr(t[1:]), 10, 64); err != nil {
				errstr, hasErr = "CLIENT_ERROR bad token in command line format\r\n", true
			}
		case 'M':
			if len(t) != 2 {
				errstr, hasErr = "CLIENT_ERROR incorrect length for M token\r\n", true
			}
		case 'J':
			if _, err := strconv.ParseUint(bstr(t[1:]), 10, 64); err != nil {
				errstr, hasErr = "CLIENT_ERROR invalid numeric initial value\r\n", true
			}
		case 'D':
			if _, err := strconv.ParseUint(bstr(t[1:]), 10, 64); err != nil {
				errstr, hasErr = "CLIENT_ERROR invalid numeric delta value\r\n", true
			}
		case 'v':
			f.value = true
		case 'q':
			f.quiet = true
		case 'k', 's', 't', 'c', 'f', 'O', 'P', 'L', 'u', 'I':
		default: // h and l included: see the comment at the top.
			return "CLIENT_ERROR invalid flag\r\n"
		}
	}
	if hasErr {
		if errstr == "" {
			errstr = "CLIENT_ERROR bad command line format\r\n"
		}
		return errstr
	}
	if write {
		c.refuse(ProtoMeta)
		return readOnly
	}
	return ""
}

// mg answers a meta get.
func (c *mcConn) mg(toks [][]byte) {
	switch {
	case len(toks) < 2:
		c.w.WriteString("ERROR\r\n")
		return
	case len(toks[1]) > MaxKeyLength:
		c.w.WriteString("CLIENT_ERROR bad command line format\r\n")
		return
	case len(toks) > metaMaxTokens:
		c.w.WriteString("CLIENT_ERROR options flags are too long\r\n")
		return
	}
	f := metaFlags{key: toks[1]}
	if e := c.mgFlags(toks, &f); e != "" {
		c.w.WriteString(e)
		return
	}
	// Opaque tokens are checked before anything is written.
	for _, t := range toks[2:] {
		if t[0] == 'O' && len(t) > metaMaxOpaque {
			c.w.WriteString("CLIENT_ERROR opaque token too long\r\n")
			return
		}
	}
	snap := c.s.set.Acquire()
	defer snap.Release()
	if !c.lookup(snap, f.key) {
		if f.quiet {
			return
		}
		c.w.WriteString("EN")
		for _, t := range toks[2:] {
			switch t[0] {
			case 'O':
				c.w.WriteByte(' ')
				c.w.Write(t)
			case 'k':
				c.metaKey(f.key, f.binKey)
			}
		}
		c.w.WriteString("\r\n")
		return
	}
	if f.value {
		c.w.WriteString("VA ")
		c.w.Write(strconv.AppendInt(c.num[:0], int64(len(c.val)), 10))
	} else {
		c.w.WriteString("HD")
	}
	for _, t := range toks[2:] {
		switch t[0] {
		case 's':
			c.w.WriteString(" s")
			c.w.Write(strconv.AppendInt(c.num[:0], int64(len(c.val)), 10))
		case 't':
			c.w.WriteString(" t-1")
		case 'c':
			c.w.WriteString(" c")
			c.w.Write(strconv.AppendUint(c.num[:0], snap.Generation(), 10))
		case 'f':
			c.w.WriteString(" f0")
		case 'O':
			c.w.WriteByte(' ')
			c.w.Write(t)
		case 'k':
			// memcached returns the key as it was stored: base64 only for
			// an item stored under a binary key. A key read here is
			// returned as text when it can be.
			c.metaKey(f.key, f.binKey && !validTextKey(f.key))
		}
	}
	c.w.WriteString("\r\n")
	if f.value {
		c.w.Write(c.val)
		c.w.WriteString("\r\n")
	}
}

// metaKey writes " k<key>", base64-encoded and followed by " b" when bin.
func (c *mcConn) metaKey(key []byte, bin bool) {
	c.w.WriteString(" k")
	if !bin {
		c.w.Write(key)
		return
	}
	n := base64.StdEncoding.EncodedLen(len(key))
	if cap(c.bkey) < n {
		c.bkey = make([]byte, n)
	}
	enc := c.bkey[:n]
	base64.StdEncoding.Encode(enc, key)
	c.w.Write(enc)
	c.w.WriteString(" b")
}

// validTextKey reports whether k can be written as a text-protocol key:
// no spaces or control characters.
func validTextKey(k []byte) bool {
	for _, b := range k {
		if b <= ' ' || b == 0x7f {
			return false
		}
	}
	return len(k) > 0
}
