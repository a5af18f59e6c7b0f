package document

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/compile/source"
)

// rowBuilder gathers the values of one row by column name. Discovering,
// it adds every new name as a column; otherwise a name that is not a
// column is the row's error. The first error of a row is kept and the
// rest of the row is read past, so that the reader can go on with the
// next row.
type rowBuilder struct {
	columns  []string
	index    map[string]int
	discover bool
	vals     [][]byte
	kinds    []valueKinds // the kinds of value each column was given
	seen     []uint64
	offs     []int64 // where each column's value of the row is (ValuePos)
	gen      uint64
	err      error // the row's first error
	errOff   int64 // where it is

	buf    []byte
	ends   []int
	fields [][]byte
}

func newRowBuilder(columns []string, discover bool) *rowBuilder {
	b := &rowBuilder{discover: discover, index: map[string]int{}}
	for _, c := range columns {
		b.add(c)
	}
	return b
}

func (b *rowBuilder) add(name string) int {
	i := len(b.columns)
	b.columns = append(b.columns, name)
	b.index[name] = i
	b.vals = append(b.vals, nil)
	b.kinds = append(b.kinds, 0)
	b.seen = append(b.seen, 0)
	b.offs = append(b.offs, 0)
	return i
}

// begin starts a row.
func (b *rowBuilder) begin() {
	b.gen++
	b.err = nil
}

// fail records the row's error (the first one counts).
func (b *rowBuilder) fail(off int64, format string, args ...any) {
	if b.err == nil {
		b.err, b.errOff = fmt.Errorf(format, args...), off
	}
}

// valueKinds is a set of the kinds of JSON value a column was given.
type valueKinds uint8

const (
	kindText   valueKinds = 1 << iota // a string (or a YAML scalar)
	kindNumber                        // a JSON number
	kindBool                          // true or false
	kindJSON                          // an array or object kept as JSON text
)

// columnType is the .lut column type (format.ParseColumnType's name) of
// a column given the values of kinds, nulls aside: number or bool when
// all its values were of that kind, json when they were JSON texts of
// several kinds (each is one JSON text as written), "" (text) when any
// was a string or there was no value.
func (k valueKinds) columnType() string {
	switch {
	case k == 0 || k&kindText != 0:
		return ""
	case k == kindNumber:
		return "number"
	case k == kindBool:
		return "bool"
	}
	return "json"
}

// set gives column name the value val, a string; off is where the value
// is, for errors and for ValuePos.
func (b *rowBuilder) set(name string, val []byte, off int64) {
	b.setKind(name, val, off, kindText)
}

// setKind gives column name the value val of kind k (0 for null).
func (b *rowBuilder) setKind(name string, val []byte, off int64, k valueKinds) {
	if b.err != nil {
		return
	}
	i, ok := b.index[name]
	if !ok {
		if !b.discover {
			b.fail(off, "field %q is not a column (columns: %s)", name, columnList(b.columns))
			return
		}
		if len(b.columns) >= maxColumns {
			b.fail(off, "%w", errTooManyColumns)
			return
		}
		i = b.add(name)
	}
	if b.seen[i] == b.gen {
		b.fail(off, "column %q is given twice in the row", name)
		return
	}
	b.seen[i] = b.gen
	b.offs[i] = off
	b.kinds[i] |= k
	b.vals[i] = append(b.vals[i][:0], val...)
}

// columnTypes returns the column type of each column (columnType) from
// the values given so far.
func (b *rowBuilder) columnTypes() []string {
	out := make([]string, len(b.columns))
	for i, k := range b.kinds {
		out[i] = k.columnType()
	}
	return out
}

// finish returns the row's fields, valid until the next row.
func (b *rowBuilder) finish() [][]byte {
	if len(b.ends) != len(b.columns) {
		b.ends = make([]int, len(b.columns))
		b.fields = make([][]byte, len(b.columns))
	}
	buf := b.buf[:0]
	for i, v := range b.vals {
		if b.seen[i] == b.gen {
			buf = append(buf, v...)
		}
		b.ends[i] = len(buf)
	}
	b.buf = buf
	source.SplitFields(b.fields, buf, b.ends)
	return b.fields
}

// maxColumns bounds the columns a document may have.
const maxColumns = 10000

// errTooManyColumns ends the read of a document: it is not a table.
var errTooManyColumns = fmt.Errorf("more than %d columns", maxColumns)

// columnList lists columns for an error, the first 20 of them.
func columnList(columns []string) string {
	if len(columns) > 20 {
		return strings.Join(columns[:20], ", ") + fmt.Sprintf(" and %d more", len(columns)-20)
	}
	return strings.Join(columns, ", ")
}

// join names a nested field by its path.
func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// at returns where column i's value of the row is (offs), or row, where
// the row is, when the row gives it none.
func (b *rowBuilder) at(i int, row int64) int64 {
	if i >= 0 && i < len(b.seen) && b.seen[i] == b.gen {
		return b.offs[i]
	}
	return row
}
