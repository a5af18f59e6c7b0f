package format

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// narrowRecord lays out a record of key and vals in the narrow layout.
func narrowRecord(key string, vals ...string) []byte {
	b := binary.LittleEndian.AppendUint16(nil, uint16(len(key)))
	end := 0
	for _, v := range vals {
		end += len(v)
		b = binary.LittleEndian.AppendUint16(b, uint16(end))
	}
	b = append(b, key...)
	for _, v := range vals {
		b = append(b, v...)
	}
	return b
}

// FuzzRecord parses arbitrary bytes as a record: nothing panics, and the
// value ends AppendEnds gives agree with the values AppendValues and Value
// give, or AppendEnds reports a damaged record where some value is nil.
func FuzzRecord(f *testing.F) {
	f.Add(narrowRecord("k", "a", "bc", ""), uint8(3))
	f.Add(narrowRecord("key", "value one", "2"), uint8(2))
	f.Add(narrowRecord("", ""), uint8(1))
	wide := binary.LittleEndian.AppendUint16(nil, WideMarker)
	wide = binary.LittleEndian.AppendUint16(wide, 0)
	for _, u := range []uint32{1, 2, 5} {
		wide = binary.LittleEndian.AppendUint32(wide, u)
	}
	f.Add(append(wide, "kvvvv"...), uint8(2))
	f.Add([]byte{3, 0, 9, 0, 1, 0, 'k', 'e', 'y', 'a', 'b'}, uint8(2)) // ends decrease
	f.Fuzz(func(t *testing.T, data []byte, cols uint8) {
		r, ok := ParseRecord(data, 0, int(cols%40))
		if !ok {
			return
		}
		vals := r.AppendValues(nil)
		ends, ok := r.AppendEnds([]int32{-1})
		if len(vals) != r.Columns() {
			t.Fatalf("%d values for %d columns", len(vals), r.Columns())
		}
		if !ok {
			if len(ends) != 1 {
				t.Fatalf("damaged record, but dst grew to %v", ends)
			}
			for _, v := range vals {
				if v == nil {
					return
				}
			}
			t.Fatalf("AppendEnds reports damage, but every value is readable: %q", vals)
		}
		ends = ends[1:]
		if len(ends) != r.Columns() {
			t.Fatalf("%d ends for %d columns", len(ends), r.Columns())
		}
		all, start := r.Values(), 0
		for i, end := range ends {
			v := all[start:end]
			if vals[i] == nil || !bytes.Equal(v, vals[i]) || !bytes.Equal(v, r.Value(i)) {
				t.Fatalf("value %d: ends give %q, AppendValues %q, Value %q", i, v, vals[i], r.Value(i))
			}
			start = int(end)
		}
	})
}
