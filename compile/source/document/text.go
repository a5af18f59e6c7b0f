package document

import (
	"errors"

	"github.com/lutkit/lutkit/internal/jsonstr"
)

// textEncoder writes a nested value as compact JSON text: what a column
// holds for a value kept as JSON. JSON and YAML documents write the same
// text for the same value (strings escaped by jsonstr, as rows are).
type textEncoder struct {
	buf   []byte
	stack []frame
}

type frame struct {
	obj bool
	n   int // values written: keys and values for an object
}

var errTooDeep = errors.New("values nest more than 1000 deep")

func (e *textEncoder) reset() { e.buf, e.stack = e.buf[:0], e.stack[:0] }

// sep writes what comes before the next key or value.
func (e *textEncoder) sep() {
	if len(e.stack) == 0 {
		return
	}
	f := &e.stack[len(e.stack)-1]
	switch {
	case f.obj && f.n%2 == 1:
		e.buf = append(e.buf, ':')
	case f.n > 0:
		e.buf = append(e.buf, ',')
	}
	f.n++
}

// open starts an object ('{') or an array ('[').
func (e *textEncoder) open(c byte) error {
	e.sep()
	if len(e.stack) >= maxDepth {
		return errTooDeep
	}
	e.buf = append(e.buf, c)
	e.stack = append(e.stack, frame{obj: c == '{'})
	return nil
}

// close ends the innermost object or array; it reports whether that was
// the outermost.
func (e *textEncoder) close() bool {
	top := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	if top.obj {
		e.buf = append(e.buf, '}')
	} else {
		e.buf = append(e.buf, ']')
	}
	return len(e.stack) == 0
}

// str writes a string.
func (e *textEncoder) str(s string) {
	e.sep()
	e.buf = jsonstr.AppendStringS(e.buf, s)
}

// literal writes a number, true, false or null.
func (e *textEncoder) literal(s string) {
	e.sep()
	e.buf = append(e.buf, s...)
}
