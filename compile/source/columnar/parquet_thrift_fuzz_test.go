package columnar

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// FuzzThriftSkip reads any bytes as the fields of a Thrift structure
// with thriftReader and with the Thrift library arrow-go reads page
// headers with: both read them, to the same byte, or neither does. The
// seeds are a page header, fields of nested lists, a map of booleans, a
// stop byte with an id delta, and an i32 and a binary size whose varints
// have bits above 32.
func FuzzThriftSkip(f *testing.F) {
	for _, s := range [][]byte{
		{0x15, 0x00, 0x15, 0xc8, 0x01, 0x15, 0xc8, 0x01, 0x2c, 0x15, 0x14, 0x15, 0x0a, 0x00, 0x00},
		{0xa9, 0x19, 0x19, 0x09, 0x00},
		{0x1b, 0x01, 0x11, 0x01, 0x00},
		{0x15, 0x02, 0xf0},
		{0x15, 0x80, 0x80, 0x80, 0x80, 0x10, 0x18, 0x83, 0x80, 0x80, 0x80, 0x10, 'a', 'b', 'c', 0x00},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &thriftReader{b: data}
		r.fields(thriftMaxDepth)
		buf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(bytes.Clone(data))}
		p := thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{})
		// A structure's fields are skipped one level below it.
		err := thrift.Skip(context.Background(), p, thrift.STRUCT, thriftMaxDepth+1)
		pos := len(data) - int(buf.RemainingBytes())
		if (err == nil) != (r.err == nil) || err == nil && pos != r.pos {
			t.Fatalf("% x: the Thrift library read %d bytes (%v), thriftReader %d (%v)", data, pos, err, r.pos, r.err)
		}
	})
}
