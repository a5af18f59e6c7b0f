package reader_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/reader"
)

// FuzzOpenBytes opens arbitrary bytes as a table. It must return an error
// or a table that survives lookups, iteration and Verify without panicking.
func FuzzOpenBytes(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.lut")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// The tables of 2,000 rows (bucketed.lut, partitioned.lut) are
		// too slow an input for a short run: their own tests damage them.
		if len(b) > 32<<10 {
			continue
		}
		f.Add(b)
		// Seeds with a damaged tail and a flipped byte in DATA.
		f.Add(b[:len(b)-9])
		d := bytes.Clone(b)
		d[200] ^= 0xff
		f.Add(d)
	}
	f.Add([]byte("not a table"))
	f.Add([]byte(nil))
	f.Add(bytes.Repeat([]byte{0xff}, 1024))
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl, err := reader.OpenBytes(data)
		if err != nil {
			return
		}
		var row reader.Row
		for _, k := range []string{"1", "2", "3", "", "ann\x1foslo, no", "zzz"} {
			if tbl.Get([]byte(k), &row) {
				for i := 0; i < row.Len()+1; i++ {
					row.Col(i)
				}
			}
		}
		out := make([]reader.View, 2)
		tbl.LookupBatch([][]byte{[]byte("1"), []byte("x")}, out)
		// Damaged tables may fail these: only the absence of a panic is checked.
		_ = tbl.Records(func(v reader.View) bool { v.Col(0); return true })
		_ = tbl.Verify()
	})
}

// FuzzRangeTable opens damaged range and time-bounded tables, and range
// tables bounded in time: lookups, Records and Verify must not panic.
func FuzzRangeTable(f *testing.F) {
	for _, p := range []string{"testdata/range.lut", "testdata/lease.lut", "testdata/rangetime.lut"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl, err := reader.OpenBytes(data)
		if err != nil {
			return
		}
		out := make([]reader.View, 3)
		var row reader.Row
		for _, x := range []int64{-1, 0, 7, 15, 25, 1 << 40} {
			tbl.MatchRange(x, out)
			tbl.GetRange(x, &row)
			tbl.MatchAt([]byte("1"), x, out)
			tbl.GetAt([]byte("2"), x, &row)
			tbl.MatchRangeAt(x, 7, out)
			tbl.LookupRangeAt(5, x)
		}
		tbl.Get([]byte("7"), &row)
		_ = tbl.Records(func(v reader.View) bool { v.Col(0); return true })
		_ = tbl.Verify()
	})
}
