package compile

import (
	"errors"
	"io"

	"github.com/lutkit/lutkit/compile/source"
)

// The source is read by a goroutine of its own, a batch of rows ahead of
// the goroutine that builds, hashes and writes the records, so that
// parsing and writing use a core each. The rows reach the writer in
// source order, so the table is the same bytes as with one goroutine.

const (
	batchRows     = 2048 // rows per batch
	batchesAhead  = 4    // batches in flight between the reader and the writer
	progressEvery = 0xffff
)

// rowBatch is a run of rows copied out of the source: their fields end to
// end in buf, the end of each field in ends. Of a source with byte
// positions (source.FieldPositioner), quoted holds the sets of the rows'
// quoted fields, end to end, which place their fields once the source has
// moved on (fieldPos).
type rowBatch struct {
	buf    []byte
	ends   []int
	rows   []batchRow
	quoted []uint64
}

// batchRow is one row of a batch, or the error the source gave in its
// place.
type batchRow struct {
	line int64
	// at is where the row is kept in the source, in source order
	// (entry.at): its line, or of a source that places its values
	// (source.ValuePositioner) the place of its key (packPlace).
	at    int64
	first int // index in ends of the row's first field
	n     int // field count
	// quoted[qlo:qhi] of the batch is the set of the row's quoted
	// fields (source.FieldPositioner.AppendQuoted).
	qlo, qhi int
	err      error
}

// fields returns the fields of row r, appended to dst[:0]; they alias the
// batch.
func (b *rowBatch) fields(r *batchRow, dst [][]byte) [][]byte {
	dst = dst[:0]
	start := 0
	if r.first > 0 {
		start = b.ends[r.first-1]
	}
	for _, end := range b.ends[r.first : r.first+r.n] {
		dst = append(dst, b.buf[start:end:end])
		start = end
	}
	return dst
}

// fieldPos returns the line and the byte column where field i of row r,
// whose fields are fields, starts in a source with byte positions (see
// source.FieldPositioner).
func (b *rowBatch) fieldPos(r *batchRow, fields [][]byte, i int) (line int64, column int) {
	return source.FieldPosOf(fields, r.line, b.quoted[r.qlo:r.qhi], i)
}

// rowReader reads the source ahead into batches.
type rowReader struct {
	batches chan *rowBatch // full batches, in source order; closed at the end
	free    chan *rowBatch // batches the writer is done with
	stop    chan struct{}  // closed when the writer gives up
}

// readRows starts reading src ahead; keyField is the source index of the
// first key column, which places the rows of a source.ValuePositioner.
// The writer must call close when it is done, whether or not it read
// every batch.
func readRows(src source.Reader, keyField int, progress func(int64)) *rowReader {
	r := &rowReader{
		batches: make(chan *rowBatch, batchesAhead),
		free:    make(chan *rowBatch, batchesAhead+2),
		stop:    make(chan struct{}),
	}
	for range batchesAhead + 2 {
		r.free <- &rowBatch{}
	}
	go r.run(src, keyField, progress)
	return r
}

func (r *rowReader) run(src source.Reader, keyField int, progress func(int64)) {
	defer close(r.batches)
	var rows int64
	// The set of the quoted fields of each row is kept with it: a row
	// without any costs only this call.
	fp, _ := src.(source.FieldPositioner)
	// Rows of a document may share a line: each is kept where its key is.
	vp, _ := src.(source.ValuePositioner)
	for {
		var b *rowBatch
		select {
		case b = <-r.free:
		case <-r.stop:
			return
		}
		b.buf, b.ends, b.rows, b.quoted = b.buf[:0], b.ends[:0], b.rows[:0], b.quoted[:0]
		final := false
		for len(b.rows) < batchRows && !final {
			fields, err := src.Next()
			if errors.Is(err, io.EOF) {
				final = true
				break
			}
			if err != nil {
				final = !source.Skippable(err) // a read error or a final row error ends the source
				b.rows = append(b.rows, batchRow{err: err})
				continue
			}
			line := src.Line()
			row := batchRow{line: line, at: line, first: len(b.ends), n: len(fields)}
			if vp != nil {
				row.at = packPlace(vp.ValuePos(keyField))
			}
			if fp != nil {
				row.qlo = len(b.quoted)
				b.quoted = fp.AppendQuoted(b.quoted)
				row.qhi = len(b.quoted)
			}
			for _, f := range fields {
				b.buf = append(b.buf, f...)
				b.ends = append(b.ends, len(b.buf))
			}
			b.rows = append(b.rows, row)
			rows++
			if progress != nil && rows&progressEvery == 0 {
				progress(rows)
			}
		}
		select {
		case r.batches <- b:
		case <-r.stop:
			return
		}
		if final {
			if progress != nil {
				progress(rows)
			}
			return
		}
	}
}

// close stops the reader and waits until it has stopped using the source.
func (r *rowReader) close() {
	close(r.stop)
	for range r.batches {
	}
}
