package document

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"unicode/utf8"
)

// lineCounter passes a stream through, noting where its lines start, so
// that a byte offset into the stream (a decoder's InputOffset) can be
// turned into a line and column. It keeps the newlines from the last
// trim on: memory bounded by how far the decoder reads ahead. It also
// notes where the first byte that is not valid UTF-8 is: encoding/json
// reads such bytes as U+FFFD without a word.
type lineCounter struct {
	r       io.Reader
	off     int64   // bytes read so far
	nl      []int64 // offsets of the newlines at or after the trim point
	before  int64   // newlines before the trim point
	lastNL  int64   // offset of the last newline before the trim point, -1 if none
	trimmed int64
	bad     int64  // offset of the first invalid UTF-8 byte, -1 if none yet
	cut     []byte // the start of a character the end of the last read cut off
}

func newLineCounter(r io.Reader) *lineCounter { return &lineCounter{r: r, lastNL: -1, bad: -1} }

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.bad < 0 {
		c.checkUTF8(p[:n], err != nil)
	}
	b := p[:n]
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		c.nl = append(c.nl, c.off+int64(n-len(b)+i))
		b = b[i+1:]
	}
	c.off += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		err = &readError{err}
	}
	return n, err
}

// checkUTF8 checks the bytes b read at offset c.off, the last ones when
// end is set, setting c.bad at the first invalid one. A character cut off
// by the end of b is checked with the next read.
func (c *lineCounter) checkUTF8(b []byte, end bool) {
	base := c.off
	if len(c.cut) > 0 {
		start := base - int64(len(c.cut))
		k := 0
		for k < len(b) && !utf8.FullRune(c.cut) {
			c.cut = append(c.cut, b[k])
			k++
		}
		if !utf8.FullRune(c.cut) {
			if end {
				c.bad = start
			}
			return
		}
		if r, size := utf8.DecodeRune(c.cut); r == utf8.RuneError && size == 1 {
			c.bad = start
			return
		}
		c.cut = c.cut[:0]
		b, base = b[k:], base+int64(k)
	}
	n := len(b)
	if !end {
		// Hold back a character that the next read completes.
		for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					n = i
				}
				break
			}
		}
	}
	if !utf8.Valid(b[:n]) {
		c.bad = base + int64(firstInvalid(b[:n]))
		return
	}
	c.cut = append(c.cut, b[n:]...)
}

// readError is an error reading the stream, as opposed to one about its
// content.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// pos returns the 1-based line and byte column of offset off, which must
// be at or after the last trim.
func (c *lineCounter) pos(off int64) (line int64, col int) {
	i := sort.Search(len(c.nl), func(i int) bool { return c.nl[i] >= off })
	last := c.lastNL
	if i > 0 {
		last = c.nl[i-1]
	}
	return c.before + int64(i) + 1, int(off - last)
}

// trim forgets the newlines before off.
func (c *lineCounter) trim(off int64) {
	if off <= c.trimmed {
		return
	}
	i := sort.Search(len(c.nl), func(i int) bool { return c.nl[i] >= off })
	if i > 0 {
		c.lastNL = c.nl[i-1]
		c.before += int64(i)
		c.nl = append(c.nl[:0], c.nl[i:]...)
	}
	c.trimmed = off
}
