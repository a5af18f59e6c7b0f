package format

import (
	"math"
	"testing"
)

// FuzzIntervals decodes arbitrary bytes as a RANGE or TIMEBOUND section:
// DecodeIntervals and Check must fail or give a section whose lookups stay
// in bounds, never panic.
func FuzzIntervals(f *testing.F) {
	seeds := [][]Interval{
		{{Lo: 0, Hi: 1023, Off: 0}, {Lo: 443, Hi: 443, Off: 8, Line: 1}},
		{{Lo: math.MinInt64, Hi: 5, Off: 16}, {Group: 1, Lo: 6, Hi: math.MaxInt64, Off: 24}},
	}
	for i, rows := range seeds {
		for _, policy := range []uint32{OverlapNarrowest, OverlapFirst} {
			b, err := AppendIntervals(nil, rows, uint64(i+1), 4, policy)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		iv, err := DecodeIntervals(b, 0)
		if err != nil {
			return
		}
		_ = iv.Check(0, func(g, off uint64) bool { return off < 64 })
		for g := uint64(0); g < min(iv.G, 4); g++ {
			for _, x := range []int64{math.MinInt64, -1, 0, 5, 443, 1024, math.MaxInt64} {
				i, ok := iv.Find(g, x)
				if !ok {
					continue
				}
				if first, end, ok := iv.List(i); ok {
					for j := first; j < end; j++ {
						iv.Record(j)
					}
				}
			}
		}
	})
}
