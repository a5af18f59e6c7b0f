package columnar

import (
	"encoding/binary"
	"fmt"
)

// checkMessage checks the flatbuffer metadata of an Arrow IPC message for
// what arrow-go sizes allocations by when it decodes the message, and
// returns the length of the message body and, for a record batch or a
// dictionary batch, the record batch table (batch.b nil otherwise).
// arrow-go makes a slice as long as a vector's length says before it
// reads the vector (the fields and their children, the custom metadata)
// and one as long as a batch's variadic buffer count: a damaged count
// runs it out of memory. A count must fit the metadata, each element
// taking at least 4 bytes of it; the fields nest at most maxFieldDepth
// deep; a batch has a variadic buffer count for each view column (arrow-go
// reads past the counts a batch gives), and none passes its buffers. The
// view columns of a schema message are counted into views, for the
// batches that follow it.
func checkMessage(meta []byte, views *viewCounts) (bodyLen int64, batch fbTable, err error) {
	// The offsets of the flatbuffer are not checked: one that points out
	// of meta panics, as it would in arrow-go.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	msg := fbTable{meta, int(binary.LittleEndian.Uint32(meta))}
	if _, _, err := msg.vector(messageCustomMetadata, 4); err != nil {
		return 0, batch, err
	}
	bodyLen = msg.int64(messageBodyLength)
	header, ok := msg.table(messageHeader)
	if !ok {
		return bodyLen, batch, nil
	}
	var typ byte
	if f := msg.field(messageHeaderType); f != 0 {
		typ = meta[f]
	}
	switch typ {
	case headerSchema:
		fields := len(meta) / 4
		*views = viewCounts{dicts: map[int64]int{}}
		if err := checkFields(header, schemaFields, schemaCustomMetadata, 0, &fields); err != nil {
			return bodyLen, batch, err
		}
		views.count(header, schemaFields, false, 0)
	case headerDictionaryBatch:
		if batch, ok = header.table(dictionaryBatchData); ok {
			return bodyLen, batch, checkBatch(batch, views.dicts[header.int64(dictionaryBatchID)])
		}
	case headerRecordBatch:
		return bodyLen, header, checkBatch(header, views.batch)
	}
	return bodyLen, batch, nil
}

// maxFieldDepth is how deep the fields of a schema may nest: arrow-go
// reads no array nested deeper.
const maxFieldDepth = 64

// checkFields checks the custom metadata of t (a schema or a field) and
// its fields, or children, at slot children, depth deep, each field
// counted off *left: arrow-go makes a field of each, and more fields than
// the metadata has room for share tables.
func checkFields(t fbTable, children, customMetadata, depth int, left *int) error {
	if _, _, err := t.vector(customMetadata, 4); err != nil {
		return err
	}
	start, n, err := t.vector(children, 4)
	if err != nil {
		return err
	}
	if n > 0 && depth == maxFieldDepth {
		return fmt.Errorf("fields nest deeper than %d", maxFieldDepth)
	}
	if *left -= n; *left < 0 {
		return fmt.Errorf("more fields than the %d bytes of metadata hold", len(t.b))
	}
	for i := range n {
		if err := checkFields(t.elem(start, i), fieldChildren, fieldCustomMetadata, depth+1, left); err != nil {
			return err
		}
	}
	return nil
}

// viewCounts counts the view columns (BinaryView, Utf8View) of a schema
// that a record batch holds, and those that a dictionary batch of each
// dictionary holds.
type viewCounts struct {
	batch int
	dicts map[int64]int
}

// count counts the view columns of the fields of t at slot children (of
// the dictionary id when dict), and of their children.
func (v *viewCounts) count(t fbTable, children int, dict bool, id int64) {
	start, n, _ := t.vector(children, 4)
	for i := range n {
		field := t.elem(start, i)
		dict, id := dict, id
		if enc, ok := field.table(fieldDictionary); ok {
			dict, id = true, enc.int64(dictionaryEncodingID)
		}
		if f := field.field(fieldTypeType); f != 0 && (field.b[f] == typeBinaryView || field.b[f] == typeUtf8View) {
			if dict {
				v.dicts[id]++
			} else {
				v.batch++
			}
		}
		v.count(field, fieldChildren, dict, id)
	}
}

// checkBatch checks the variadic buffer counts of a record batch holding
// views view columns.
func checkBatch(batch fbTable, views int) error {
	_, buffers, err := batch.vector(batchBuffers, 16)
	if err != nil {
		return err
	}
	start, n, err := batch.vector(batchVariadicCounts, 8)
	if err != nil {
		return err
	}
	if batch.field(batchVariadicCounts) != 0 && n < views {
		return fmt.Errorf("%d variadic buffer counts for %d view columns", n, views)
	}
	for i := range n {
		if c := int64(binary.LittleEndian.Uint64(batch.b[start+8*i:])); c < 0 || c > int64(buffers) {
			return fmt.Errorf("variadic buffer count %d of a record batch of %d buffers", c, buffers)
		}
	}
	return nil
}

// Slots of the fields of the Arrow flatbuffer tables (format/Schema.fbs,
// Message.fbs, File.fbs), and the message header types.
const (
	footerVersion         = 0
	footerSchema          = 1
	footerDictionaries    = 2
	footerRecordBatches   = 3
	schemaFields          = 1
	schemaCustomMetadata  = 2
	fieldTypeType         = 2
	fieldDictionary       = 4
	fieldChildren         = 5
	fieldCustomMetadata   = 6
	messageVersion        = 0
	messageHeaderType     = 1
	messageHeader         = 2
	messageBodyLength     = 3
	messageCustomMetadata = 4
	dictionaryEncodingID  = 0
	dictionaryBatchID     = 0
	dictionaryBatchData   = 1
	batchBuffers          = 2
	batchCompression      = 3
	batchVariadicCounts   = 4
	compressionCodec      = 0

	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3
	codecZstd             = 1
	typeBinaryView        = 23
	typeUtf8View          = 24
)

// fbTable is a table of a flatbuffer: the buffer, and the offset of the
// table in it.
type fbTable struct {
	b   []byte
	pos int
}

// field returns the offset in t.b of the field at slot of t, or 0 when t
// does not have it. It reads the vtable as the flatbuffers package does:
// a slot whose offset starts before the end of the vtable is in it.
func (t fbTable) field(slot int) int {
	vtable := t.pos - int(int32(binary.LittleEndian.Uint32(t.b[t.pos:])))
	if int(binary.LittleEndian.Uint16(t.b[vtable:])) <= 4+2*slot {
		return 0
	}
	if off := int(binary.LittleEndian.Uint16(t.b[vtable+4+2*slot:])); off != 0 {
		return t.pos + off
	}
	return 0
}

// int64 returns the int64 field at slot of t (0 when t does not have it).
func (t fbTable) int64(slot int) int64 {
	if f := t.field(slot); f != 0 {
		return int64(binary.LittleEndian.Uint64(t.b[f:]))
	}
	return 0
}

// table returns the table the field at slot of t refers to.
func (t fbTable) table(slot int) (fbTable, bool) {
	f := t.field(slot)
	if f == 0 {
		return fbTable{}, false
	}
	return fbTable{t.b, f + int(binary.LittleEndian.Uint32(t.b[f:]))}, true
}

// vector returns the offset of the first element, and the length, of the
// vector the field at slot of t refers to (none: 0, 0). The length must
// fit the rest of the buffer, size bytes an element.
func (t fbTable) vector(slot, size int) (start, n int, err error) {
	f := t.field(slot)
	if f == 0 {
		return 0, 0, nil
	}
	v := f + int(binary.LittleEndian.Uint32(t.b[f:]))
	n = int(binary.LittleEndian.Uint32(t.b[v:]))
	if n > (len(t.b)-v-4)/size {
		return 0, 0, fmt.Errorf("a count of %d at offset %d of %d bytes of metadata", n, v, len(t.b))
	}
	return v + 4, n, nil
}

// elem returns table i of the vector of tables starting at start.
func (t fbTable) elem(start, i int) fbTable {
	p := start + 4*i
	return fbTable{t.b, p + int(binary.LittleEndian.Uint32(t.b[p:]))}
}
