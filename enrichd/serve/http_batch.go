package serve

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// A _batch answer is written as it is looked up, in chunks of about
// batchChunk bytes, so that its size does not depend on the request's:
// one request holds its body (at most max_body_bytes), one chunk and one
// key.
const batchChunk = 32 << 10

// maxPooledBody is the largest body buffer kept for the next request: a
// large request's buffer goes back to the garbage collector.
const maxPooledBody = 1 << 20

var errTooLarge = errors.New("request body too large")

func (a *API) batch(w http.ResponseWriter, r *http.Request, name, sep string, lq lookupQuery) {
	hb := a.pool.Get().(*httpBuf)
	defer a.putBuf(hb)
	dst := hb.body[:0]
	if n := r.ContentLength; n > int64(cap(dst)) && n <= int64(a.maxBatch) {
		dst = make([]byte, 0, n+1) // +1: readBody's read of EOF
	}
	body, err := readBody(dst, r.Body, a.maxBatch)
	hb.body = body
	if err != nil {
		if errors.Is(err, errTooLarge) {
			httpError(w, http.StatusRequestEntityTooLarge, err.Error())
		} else {
			httpError(w, http.StatusBadRequest, err.Error())
		}
		return
	}
	// A first pass checks the whole body, so that a bad one gets 400
	// before any of the answer is written; the second looks up each key
	// as it is read. Neither holds the keys.
	ks := newKeyScanner(body, hb.esc)
	for {
		_, _, ok, err := ks.next()
		if err != nil {
			hb.esc = ks.esc
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		if !ok {
			break
		}
	}
	snap := a.set.Acquire()
	defer snap.Release()
	t, m := snap.LUT(name), snap.MMDB(name)
	if t == nil && m == nil {
		hb.esc = ks.esc
		httpError(w, http.StatusNotFound, "no such table")
		return
	}
	w.Header()["Content-Type"] = ctJSON
	ks = newKeyScanner(body, ks.esc)
	defer func() { hb.esc = ks.esc }()
	out := append(hb.out[:0], '[')
	defer func() { hb.out = out }()
	for i := 0; ; i++ {
		k, null, ok, _ := ks.next()
		if !ok {
			break
		}
		if i > 0 {
			out = append(out, ',')
		}
		switch {
		case null:
			out = append(out, "null"...)
		case t != nil:
			var tk []byte
			tk, hb.key = tableKey(t, k, sbytes(sep), hb.key)
			if lq.max > 1 {
				var found bool
				if out, found = appendMatches(out, t, tk, hb.matchViews(lq.max), lq); !found {
					out = append(out, "null"...)
				}
			} else if v, found := lq.lookup(t, tk); found {
				out = appendRow(out, t, v)
			} else {
				out = append(out, "null"...)
			}
		default:
			var found bool
			mark := len(out)
			if lq.max > 1 {
				out = append(out, '[')
			}
			out, found, _ = appendRecord(out, m, k)
			switch {
			case !found:
				out = append(out[:mark], "null"...)
			case lq.max > 1:
				out = append(out, ']')
			}
		}
		if len(out) >= batchChunk {
			if _, err := w.Write(out); err != nil {
				return // the client has gone: net/http closes the connection
			}
			out = out[:0]
		}
	}
	out = append(out, "]\n"...)
	answer(w, out)
}

// putBuf returns hb to the pool, without a body buffer grown large.
func (a *API) putBuf(hb *httpBuf) {
	if cap(hb.body) > maxPooledBody {
		hb.body = nil
	}
	if cap(hb.out) > 4*batchChunk {
		hb.out = make([]byte, 0, 4096)
	}
	a.pool.Put(hb)
}

func readBody(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

var errBadArray = errors.New("body must be a JSON array of strings (or numbers), or one key per line")

// keyScanner reads the keys of a _batch body one at a time: a JSON array
// of keys (strings, numbers or null), or one key per line (blank lines
// skipped, "\r\n" allowed). A key aliases the body, or, when it has JSON
// escapes, the scanner's buffer esc, until the next call. The body is not
// written.
type keyScanner struct {
	b     []byte
	i     int
	json  bool
	first bool // no element read yet (JSON)
	done  bool
	esc   []byte
}

func newKeyScanner(body, esc []byte) keyScanner {
	trim := bytes.TrimLeft(body, " \t\r\n")
	if len(trim) > 0 && trim[0] == '[' {
		return keyScanner{b: trim, i: 1, json: true, first: true, esc: esc}
	}
	return keyScanner{b: body, esc: esc}
}

// next returns the next key (null for a JSON null), or ok false at the
// end of the body or on a syntax error (err).
func (s *keyScanner) next() (key []byte, null, ok bool, err error) {
	if s.done {
		return nil, false, false, nil
	}
	if !s.json {
		for s.i < len(s.b) {
			line := s.b[s.i:]
			if j := bytes.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
				s.i += j + 1
			} else {
				s.i = len(s.b)
			}
			line = bytes.TrimSuffix(line, []byte{'\r'})
			if len(line) > 0 {
				return line, false, true, nil
			}
		}
		s.done = true
		return nil, false, false, nil
	}
	s.ws()
	if s.first {
		s.first = false
		if s.i < len(s.b) && s.b[s.i] == ']' {
			return nil, false, false, s.end()
		}
	} else {
		if s.i >= len(s.b) {
			return s.fail()
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
		case ']':
			return nil, false, false, s.end()
		default:
			return s.fail()
		}
	}
	if s.i >= len(s.b) {
		return s.fail()
	}
	b := s.b
	switch c := b[s.i]; {
	case c == '"':
		k, n, err := s.unquote(b[s.i:])
		if err != nil {
			s.done = true
			return nil, false, false, err
		}
		s.i += n
		return k, false, true, nil
	case c == 'n' && bytes.HasPrefix(b[s.i:], []byte("null")):
		s.i += 4
		return nil, true, true, nil
	case c == '-' || (c >= '0' && c <= '9'):
		j := s.i
		for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9')) {
			j++
		}
		k := b[s.i:j]
		s.i = j
		return k, false, true, nil
	}
	return s.fail()
}

func (s *keyScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

// end is the array's closing ']' at s.i: only white space may follow.
func (s *keyScanner) end() error {
	s.done = true
	s.i++
	s.ws()
	if s.i != len(s.b) {
		return errBadArray
	}
	return nil
}

func (s *keyScanner) fail() ([]byte, bool, bool, error) {
	s.done = true
	return nil, false, false, errBadArray
}

// unquote decodes the JSON string starting at b[0] ('"') and returns the
// decoded bytes (b itself when the string has no escape, else s.esc) and
// the length of the literal.
func (s *keyScanner) unquote(b []byte) ([]byte, int, error) {
	r := 1
	for r < len(b) && b[r] != '"' && b[r] != '\\' && b[r] >= 0x20 {
		r++
	}
	if r < len(b) && b[r] == '"' {
		return b[1:r], r + 1, nil
	}
	out := append(s.esc[:0], b[1:r]...)
	defer func() { s.esc = out[:0] }()
	for r < len(b) {
		c := b[r]
		switch {
		case c == '"':
			return out, r + 1, nil
		case c < 0x20:
			return nil, 0, errors.New("control character in a JSON string")
		case c != '\\':
			out = append(out, c)
			r++
			continue
		}
		if r+1 >= len(b) {
			break
		}
		e := b[r+1]
		r += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if r+4 > len(b) {
				return nil, 0, errBadArray
			}
			v, err := strconv.ParseUint(bstr(b[r:r+4]), 16, 32)
			if err != nil {
				return nil, 0, errBadArray
			}
			r += 4
			ru := rune(v)
			if ru >= 0xD800 && ru < 0xDC00 && r+6 <= len(b) && b[r] == '\\' && b[r+1] == 'u' {
				if lo, err := strconv.ParseUint(bstr(b[r+2:r+6]), 16, 32); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					ru = 0x10000 + (ru-0xD800)<<10 + (rune(lo) - 0xDC00)
					r += 6
				}
			}
			var tmp [4]byte
			out = append(out, tmp[:encodeRune(tmp[:], ru)]...)
		default:
			return nil, 0, errBadArray
		}
	}
	return nil, 0, errBadArray
}
