package serve

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"time"
)

// The text protocol, as memcached 1.6 parses it (proto_text.c): a command
// line is split on spaces (a tab is part of a token), the count of tokens
// decides between a command and "ERROR", and a malformed storage command
// is answered without reading its data block (the client's data line is
// then read as a command, as memcached reads it).
//
// Reads: get, gets (and bget, memcached's ancient alias of get) answer
// "VALUE key 0 bytes [cas]" blocks and "END"; the cas unique is the table
// set's generation. version, stats, verbosity and quit work.
//
// Writes (set, add, replace, append, prepend, cas, delete, incr, decr,
// touch, gat, gats, flush_all) are checked as memcached checks them, their
// data block is read and dropped, and they are answered
// "SERVER_ERROR read-only", or nothing when the command ends with
// "noreply": memcached sends nothing at all back to a noreply command
// (not even an error), and a client that sent noreply reads its next
// answer as the answer to its next command.
//
// Lines starting with a two-letter command beginning with "m" are meta
// commands (memcached_meta.go).

// maxTextTokens is memcached's MAX_TOKENS less the terminal token: a line
// is split into at most this many tokens, the rest is ignored (get reads
// its keys on its own and has no limit).
const maxTextTokens = 23

// readOnly is the text answer to a write.
const readOnly = "SERVER_ERROR read-only\r\n"

// tokenize splits line into c.toks (at most maxTextTokens tokens).
func (c *mcConn) tokenize(line []byte) [][]byte {
	toks := c.toks[:0]
	for rest := line; len(toks) < maxTextTokens; {
		var t []byte
		t, rest = nextToken(rest)
		if len(t) == 0 {
			break
		}
		toks = append(toks, t)
	}
	c.toks = toks
	return toks
}

// nextToken returns the first space-separated token of b and the rest.
func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' {
		j++
	}
	return b[i:j], b[j:]
}

// maxGetLine bounds a get or gets line, which may be longer than the
// read buffer: memcached reads a multi-get of any length, and clients
// send every key of a get_many on one line (1 MiB is about 60,000 keys of
// 16 bytes). The line is held only while its keys are answered.
const maxGetLine = 1 << 20

// readLine reads one command line without its "\n" and the "\r" before it.
// A line longer than the read buffer ends the connection, unless it is a
// get of at most maxGetLine bytes.
func (c *mcConn) readLine() ([]byte, bool) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		if line, err = c.readLongGet(line); errors.Is(err, bufio.ErrBufferFull) {
			c.w.WriteString("CLIENT_ERROR line too long\r\n")
			return nil, false
		}
	}
	if err != nil {
		c.fail(err)
		return nil, false
	}
	line = line[:len(line)-1]
	// memcached drops one "\r", and only from a line longer than it.
	if len(line) > 1 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, true
}

// readLongGet reads the rest of a line whose start, head, filled the read
// buffer, into a line of its own: a get line of at most maxGetLine bytes.
// Any other line, or a longer one, is bufio.ErrBufferFull.
func (c *mcConn) readLongGet(head []byte) ([]byte, error) {
	cmd, _ := nextToken(head)
	switch bstr(cmd) {
	case "get", "gets", "bget":
	default:
		return nil, bufio.ErrBufferFull
	}
	line := append(make([]byte, 0, 2*len(head)), head...)
	for {
		part, err := c.r.ReadSlice('\n')
		if len(line)+len(part) > maxGetLine {
			return nil, bufio.ErrBufferFull
		}
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// textStep reads and answers one command. It returns false when the
// connection must close.
func (c *mcConn) textStep() bool {
	line, ok := c.readLine()
	if !ok {
		return false
	}
	cmd, rest := nextToken(line)
	if len(cmd) < 2 {
		c.count(ProtoText)
		c.w.WriteString("ERROR\r\n")
		return true
	}
	if len(cmd) == 2 && cmd[0] == 'm' {
		c.count(ProtoMeta)
		return c.meta(cmd[1], line)
	}
	c.count(ProtoText)
	switch bstr(cmd) {
	case "get", "bget":
		c.get(rest, false)
		return true
	case "gets":
		c.get(rest, true)
		return true
	case "version":
		c.w.WriteString("VERSION ")
		c.w.WriteString(c.s.opts.Version)
		c.w.WriteString("\r\n")
		return true
	case "stats":
		c.stats(rest)
		return true
	case "quit":
		return false
	}
	toks := c.tokenize(line)
	switch bstr(cmd) {
	case "set", "add", "replace", "append", "prepend":
		return c.store(toks, false)
	case "cas":
		return c.store(toks, true)
	case "delete":
		c.delete(toks)
	case "incr", "decr":
		c.arith(toks)
	case "touch":
		c.touch(toks)
	case "gat", "gats":
		c.gat(toks)
	case "flush_all":
		c.flushAll(toks)
	case "verbosity":
		c.verbosity(toks)
	default:
		c.w.WriteString("ERROR\r\n")
	}
	return true
}

// reply writes s unless the command asked for no reply.
func (c *mcConn) reply(noreply bool, s string) {
	if !noreply {
		c.w.WriteString(s)
	}
}

// noreply reports whether the last token is "noreply", which memcached
// honours before it checks anything else of the command.
func noreply(toks [][]byte) bool {
	return len(toks) > 1 && bstr(toks[len(toks)-1]) == "noreply"
}

// store refuses set, add, replace, append, prepend (want 5 or 6 tokens
// with the command) and cas (6 or 7), reading their data block first.
func (c *mcConn) store(toks [][]byte, cas bool) bool {
	want := 5
	if cas {
		want = 6
	}
	if len(toks) != want && len(toks) != want+1 {
		c.w.WriteString("ERROR\r\n")
		return true
	}
	nr := noreply(toks)
	const bad = "CLIENT_ERROR bad command line format\r\n"
	if len(toks[1]) > MaxKeyLength {
		c.reply(nr, bad)
		return true
	}
	_, e1 := strconv.ParseUint(bstr(toks[2]), 10, 32)
	_, e2 := strconv.ParseInt(bstr(toks[3]), 10, 32)
	size, e3 := strconv.ParseInt(bstr(toks[4]), 10, 32)
	if e1 != nil || e2 != nil || e3 != nil || size < 0 {
		c.reply(nr, bad)
		return true
	}
	if cas {
		if _, err := strconv.ParseUint(bstr(toks[5]), 10, 64); err != nil {
			c.reply(nr, bad)
			return true
		}
	}
	c.refuse(ProtoText)
	end, ok := c.skipData(int(size))
	if !ok {
		return false
	}
	if !end {
		c.reply(nr, "CLIENT_ERROR bad data chunk\r\n")
		return true
	}
	c.reply(nr, readOnly)
	return true
}

// skipData reads and drops a data block of size bytes and the two bytes
// after it, and reports whether those were "\r\n" (false, false when the
// connection ended first).
func (c *mcConn) skipData(size int) (end, ok bool) {
	if _, err := c.r.Discard(size); err != nil {
		c.fail(err)
		return false, false
	}
	var crlf [2]byte
	for i := range crlf {
		b, err := c.r.ReadByte()
		if err != nil {
			c.fail(err)
			return false, false
		}
		crlf[i] = b
	}
	return crlf == [2]byte{'\r', '\n'}, true
}

// delete refuses "delete KEY [0] [noreply]", checked as memcached checks
// it.
func (c *mcConn) delete(toks [][]byte) {
	if len(toks) < 2 || len(toks) > 4 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	nr := false
	if len(toks) > 2 {
		hold0 := bstr(toks[2]) == "0"
		nr = noreply(toks)
		valid := len(toks) == 3 && (hold0 || nr) || len(toks) == 4 && hold0 && nr
		if !valid {
			c.reply(nr, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n")
			return
		}
	}
	if len(toks[1]) > MaxKeyLength {
		c.reply(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	c.refuse(ProtoText)
	c.reply(nr, readOnly)
}

// arith refuses "incr|decr KEY DELTA [noreply]".
func (c *mcConn) arith(toks [][]byte) {
	if len(toks) != 3 && len(toks) != 4 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	nr := noreply(toks)
	if len(toks[1]) > MaxKeyLength {
		c.reply(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	if _, err := strconv.ParseUint(bstr(toks[2]), 10, 64); err != nil {
		c.reply(nr, "CLIENT_ERROR invalid numeric delta argument\r\n")
		return
	}
	c.refuse(ProtoText)
	c.reply(nr, readOnly)
}

// touch refuses "touch KEY EXPTIME [noreply]": it would change the item.
func (c *mcConn) touch(toks [][]byte) {
	if len(toks) != 3 && len(toks) != 4 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	nr := noreply(toks)
	if len(toks[1]) > MaxKeyLength {
		c.reply(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	if _, err := strconv.ParseInt(bstr(toks[2]), 10, 32); err != nil {
		c.reply(nr, "CLIENT_ERROR invalid exptime argument\r\n")
		return
	}
	c.refuse(ProtoText)
	c.reply(nr, readOnly)
}

// gat refuses "gat|gats EXPTIME KEY...": a get that touches.
func (c *mcConn) gat(toks [][]byte) {
	if len(toks) < 2 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	if _, err := strconv.ParseInt(bstr(toks[1]), 10, 32); err != nil {
		c.w.WriteString("CLIENT_ERROR invalid exptime argument\r\n")
		return
	}
	c.refuse(ProtoText)
	c.w.WriteString(readOnly)
}

// flushAll refuses "flush_all [DELAY] [noreply]".
func (c *mcConn) flushAll(toks [][]byte) {
	if len(toks) > 3 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	nr := noreply(toks)
	args := 1
	if nr {
		args = 2
	}
	if len(toks) != args {
		if _, err := strconv.ParseInt(bstr(toks[1]), 10, 32); err != nil {
			c.reply(nr, "CLIENT_ERROR invalid exptime argument\r\n")
			return
		}
	}
	c.refuse(ProtoText)
	c.reply(nr, readOnly)
}

// verbosity accepts "verbosity LEVEL [noreply]" and changes nothing.
func (c *mcConn) verbosity(toks [][]byte) {
	if len(toks) != 2 && len(toks) != 3 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	nr := noreply(toks)
	if _, err := strconv.ParseUint(bstr(toks[1]), 10, 32); err != nil {
		c.reply(nr, "CLIENT_ERROR bad command line format\r\n")
		return
	}
	c.reply(nr, "OK\r\n")
}

// get answers get/gets. A key longer than 250 bytes fails the whole
// command with CLIENT_ERROR, before any value is written.
func (c *mcConn) get(keys []byte, withCAS bool) {
	n := 0
	for rest := keys; ; n++ {
		var k []byte
		k, rest = nextToken(rest)
		if len(k) == 0 {
			break
		}
		if len(k) > MaxKeyLength {
			c.w.WriteString("CLIENT_ERROR bad command line format\r\n")
			return
		}
	}
	if n == 0 {
		c.w.WriteString("ERROR\r\n")
		return
	}
	snap := c.s.set.Acquire()
	defer snap.Release()
	for rest := keys; ; {
		var k []byte
		k, rest = nextToken(rest)
		if len(k) == 0 {
			break
		}
		if !c.lookup(snap, k) {
			continue
		}
		c.w.WriteString("VALUE ")
		c.w.Write(k)
		c.w.WriteString(" 0 ")
		c.w.Write(strconv.AppendInt(c.num[:0], int64(len(c.val)), 10))
		if withCAS {
			c.w.WriteByte(' ')
			c.w.Write(strconv.AppendUint(c.num[:0], snap.Generation(), 10))
		}
		c.w.WriteString("\r\n")
		c.w.Write(c.val)
		c.w.WriteString("\r\n")
	}
	c.w.WriteString("END\r\n")
}

// statGroups are memcached's groups of statistics ("stats items"), which
// hold nothing here; memcached answers any other name "ERROR" (text) or
// "Not found" (binary), and so does the listener ("reset" included: its
// counters are not reset).
var statGroups = map[string]bool{"settings": true, "items": true, "slabs": true, "sizes": true, "conns": true}

func (c *mcConn) stats(args []byte) {
	if a, _ := nextToken(args); len(a) > 0 {
		if statGroups[bstr(a)] {
			c.w.WriteString("END\r\n")
		} else {
			c.w.WriteString("ERROR\r\n")
		}
		return
	}
	c.eachStat(func(name string, v []byte) {
		c.w.WriteString("STAT ")
		c.w.WriteString(name)
		c.w.WriteByte(' ')
		c.w.Write(v)
		c.w.WriteString("\r\n")
	})
	c.w.WriteString("END\r\n")
}

// eachStat calls fn with every statistic: memcached's names where one
// means the same, then the tables'.
func (c *mcConn) eachStat(fn func(name string, v []byte)) {
	s := c.s
	snap := s.set.Acquire()
	ntables := len(snap.Names())
	gen := snap.Generation()
	snap.Release()
	st := s.Stats()
	num := func(name string, v int64) { fn(name, strconv.AppendInt(c.num[:0], v, 10)) }
	num("pid", int64(os.Getpid()))
	num("uptime", int64(time.Since(s.started)/time.Second))
	num("time", time.Now().Unix())
	fn("version", sbytes(s.opts.Version))
	num("max_connections", int64(s.opts.MaxConnections))
	num("curr_connections", st.CurrConnections)
	num("total_connections", int64(st.TotalConnections))
	num("rejected_connections", int64(st.RejectedConnections))
	if s.opts.IdleTimeout > 0 { // as memcached: only with an idle timeout
		num("idle_kicks", int64(st.IdleClosed))
	}
	num("cmd_get", int64(st.Gets))
	num("get_hits", int64(st.Hits))
	num("get_misses", int64(st.Misses))
	num("hits", int64(st.Hits))
	num("misses", int64(st.Misses))
	for p, name := range ProtocolNames {
		num(name+"_requests", int64(st.Requests[p]))
		num(name+"_writes_refused", int64(st.Refused[p]))
	}
	num("tables", int64(ntables))
	num("tables_generation", int64(gen))
}
