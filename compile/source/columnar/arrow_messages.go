package columnar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ipcMessages is the ipc.MessageReader of an Arrow IPC stream, which
// reads its messages one after the other, or of an Arrow IPC file, which
// gives the schema of its footer (schemaMessage) and then reads the
// messages its footer lists, the dictionaries first. arrow-go's own readers allocate
// by the lengths a message gives before they read it; this one checks
// each length against the bytes left in the file, and the counts of the
// metadata against its length (checkMessage), first.
type ipcMessages struct {
	r    io.ReaderAt
	size int64
	mem  *limitAllocator // for the message bodies

	// schema is the schema message of a file, until it is read; blocks
	// holds the messages of a file left to read; next is the offset of
	// the next message of a stream.
	file   bool
	schema *ipc.Message
	blocks []ipcBlock
	next   int64

	msg   *ipc.Message // valid until the next call to Message
	views viewCounts   // of the schema read
}

// ipcBlock is a message of a file as its footer lists it: the offset,
// the length of the metadata with its prefix, and that of the body.
type ipcBlock struct {
	offset, meta, body int64
}

// readFooter reads the footer of an Arrow IPC file for its schema and
// the offsets of its messages. The schema is the footer's: a file need
// not start with a schema message (the JavaScript writer starts it with
// the first batch), and the readers of arrow-go, Arrow C++ and arrow-rs
// read the footer's alone.
func (m *ipcMessages) readFooter() (err error) {
	var tail [10]byte
	if m.size < int64(8+len(tail)) {
		return fmt.Errorf("a file of %d bytes has no room for a footer", m.size)
	}
	if _, err := m.r.ReadAt(tail[:], m.size-int64(len(tail))); err != nil {
		return err
	}
	if !bytes.Equal(tail[4:], arrowMagic) {
		return errors.New("no footer: the file does not end with ARROW1")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:]))
	if n > m.size-8-int64(len(tail)) {
		return fmt.Errorf("footer length %d passes the start of the file of %d bytes", n, m.size)
	}
	footer := make([]byte, n)
	if _, err := m.r.ReadAt(footer, m.size-int64(len(tail))-n); err != nil {
		return err
	}
	m.file = true
	// A footer offset that points out of footer panics.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("footer: %v", p)
		}
	}()
	root := fbTable{footer, int(binary.LittleEndian.Uint32(footer))}
	if m.schema, err = m.schemaMessage(root); err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	var lists [2][]ipcBlock
	for l, slot := range []int{footerDictionaries, footerRecordBatches} {
		start, n, err := root.vector(slot, 24) // a Block struct
		if err != nil {
			return fmt.Errorf("footer: %w", err)
		}
		for i := range n {
			b := footer[start+24*i:]
			lists[l] = append(lists[l], ipcBlock{
				offset: int64(binary.LittleEndian.Uint64(b)),
				meta:   int64(int32(binary.LittleEndian.Uint32(b[8:]))),
				body:   int64(binary.LittleEndian.Uint64(b[16:])),
			})
		}
	}
	if err := checkBlocks(lists[0], lists[1], m.size-int64(len(tail))-n); err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	m.blocks = append(lists[0], lists[1]...)
	return nil
}

// checkBlocks checks the blocks of the dictionaries and of the record
// batches of a file whose footer starts at end: each lies between the
// magic that starts the file (8 bytes with its padding) and the footer,
// each list in the order of the file, and no two blocks share a byte. A
// writer writes the messages one after the other, the dictionaries
// interleaved with the record batches in the order written, and lists
// each in the list of its kind (the Arrow specification, and the C++,
// Go and JavaScript writers); listing a block again, or blocks that
// overlap, makes the reading of a file grow with the square of its size.
func checkBlocks(dicts, batches []ipcBlock, end int64) error {
	for _, list := range [][]ipcBlock{dicts, batches} {
		for i, b := range list {
			if b.offset < 8 || b.offset > end || b.meta < 0 || b.meta > end-b.offset || b.body < 0 || b.body > end-b.offset-b.meta {
				return fmt.Errorf("a block at offset %d of %d bytes of metadata and %d of body, outside bytes 8 to %d of the file", b.offset, b.meta, b.body, end)
			}
			if i > 0 && b.offset <= list[i-1].offset {
				return fmt.Errorf("a block at offset %d after one at offset %d", b.offset, list[i-1].offset)
			}
		}
	}
	// Merge the two lists, each in order, by offset: each block must
	// end before the next starts.
	prev := ipcBlock{offset: 0, meta: 8}
	for len(dicts) > 0 || len(batches) > 0 {
		var b ipcBlock
		if len(batches) == 0 || len(dicts) > 0 && dicts[0].offset < batches[0].offset {
			b, dicts = dicts[0], dicts[1:]
		} else {
			b, batches = batches[0], batches[1:]
		}
		if b.offset < prev.offset+prev.meta+prev.body {
			return fmt.Errorf("the block at offset %d overlaps the one at offset %d", b.offset, prev.offset)
		}
		prev = b
	}
	return nil
}

// schemaMessage returns the schema message of a file: a Message table
// whose header is the Schema table of the footer (root), followed by a
// copy of the footer, checked by checkMessage as a schema message read
// from the file is.
func (m *ipcMessages) schemaMessage(root fbTable) (*ipc.Message, error) {
	schema, ok := root.table(footerSchema)
	if !ok {
		return nil, errors.New("no schema")
	}
	// The root offset, the vtable of the Message (4 slots), and the
	// Message: its vtable offset, version (int16), header type (byte),
	// header (an offset from where it is, forward to the schema) and
	// body length (int64, 0). The footer follows.
	const vtable, table, footerAt = 4, 16, 40
	meta := make([]byte, footerAt+len(root.b))
	le := binary.LittleEndian
	le.PutUint32(meta[0:], table)
	le.PutUint16(meta[vtable:], 4+2*4)            // the vtable's length
	le.PutUint16(meta[vtable+2:], footerAt-table) // the table's
	le.PutUint16(meta[vtable+4+2*messageVersion:], 4)
	le.PutUint16(meta[vtable+4+2*messageHeaderType:], 6)
	le.PutUint16(meta[vtable+4+2*messageHeader:], 8)
	le.PutUint16(meta[vtable+4+2*messageBodyLength:], 16)
	le.PutUint32(meta[table:], table-vtable)
	if f := root.field(footerVersion); f != 0 {
		copy(meta[table+4:table+6], root.b[f:f+2])
	}
	meta[table+6] = headerSchema
	le.PutUint32(meta[table+8:], uint32(footerAt+schema.pos-(table+8)))
	copy(meta[footerAt:], root.b)
	if _, _, err := checkMessage(meta, &m.views); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(nil)), nil
}

func (m *ipcMessages) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	if m.schema != nil {
		m.msg, m.schema = m.schema, nil
		return m.msg, nil
	}
	pos := m.next
	var blk ipcBlock
	if m.file {
		if len(m.blocks) == 0 {
			return nil, io.EOF
		}
		blk, m.blocks = m.blocks[0], m.blocks[1:]
		pos = blk.offset
	}
	msg, end, err := m.read(pos)
	if m.file && errors.Is(err, io.EOF) {
		err = errors.New("an end-of-stream marker where the footer lists a message")
	}
	if err == nil && m.file {
		if body := msg.BodyLen(); blk.meta != end-pos-body || blk.body != body {
			msg.Release()
			err = fmt.Errorf("the footer gives %d bytes of metadata and %d of body, the message %d and %d", blk.meta, blk.body, end-pos-body, body)
		}
	}
	if err != nil {
		if !errors.Is(err, io.EOF) {
			err = fmt.Errorf("message at offset %d: %w", pos, err)
		}
		return nil, err
	}
	m.msg, m.next = msg, end
	return msg, nil
}

// read reads the message at offset pos, and returns it and the offset
// after it. At the end-of-stream marker, or at the end of a stream, it
// returns io.EOF.
func (m *ipcMessages) read(pos int64) (*ipc.Message, int64, error) {
	if pos < 0 || pos > m.size {
		return nil, 0, fmt.Errorf("offset past the end of the file of %d bytes", m.size)
	}
	// A continuation marker and the metadata length, or (before Arrow
	// 0.15) the length alone; a length of 0 ends the stream.
	var head [8]byte
	n, err := m.r.ReadAt(head[:], pos)
	if n == 0 && errors.Is(err, io.EOF) && !m.file {
		return nil, 0, io.EOF
	}
	if n < 4 {
		return nil, 0, fmt.Errorf("the file ends in the message length: %w", err)
	}
	metaLen, at := int64(binary.LittleEndian.Uint32(head[:])), pos+4
	if metaLen == 0xffffffff {
		if n < 8 {
			return nil, 0, fmt.Errorf("the file ends in the message length: %w", err)
		}
		metaLen, at = int64(binary.LittleEndian.Uint32(head[4:])), pos+8
	}
	if metaLen == 0 {
		return nil, 0, io.EOF
	}
	if metaLen < 4 || metaLen > m.size-at {
		return nil, 0, fmt.Errorf("metadata length %d passes the end of the file of %d bytes", metaLen, m.size)
	}
	meta := make([]byte, metaLen)
	if _, err := m.r.ReadAt(meta, at); err != nil {
		return nil, 0, err
	}
	at += metaLen
	bodyLen, batch, err := checkMessage(meta, &m.views)
	if err != nil {
		return nil, 0, fmt.Errorf("metadata: %w", err)
	}
	if bodyLen < 0 || bodyLen > m.size-at {
		return nil, 0, fmt.Errorf("body length %d passes the end of the file of %d bytes", bodyLen, m.size)
	}
	body := memory.NewResizableBuffer(m.mem)
	defer body.Release()
	body.Resize(int(bodyLen))
	if _, err := m.r.ReadAt(body.Bytes(), at); err != nil {
		return nil, 0, err
	}
	if batch.b != nil {
		if err := checkZstdWindows(batch, body.Bytes(), m.mem.limit); err != nil {
			return nil, 0, err
		}
	}
	return ipc.NewMessage(memory.NewBufferBytes(meta), body), at + bodyLen, nil
}

// Retain and Release: the reader is only released once, by the arrow-go
// reader reading it.
func (m *ipcMessages) Retain() {}

func (m *ipcMessages) Release() {
	if m.schema != nil {
		m.schema.Release()
		m.schema = nil
	}
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}
