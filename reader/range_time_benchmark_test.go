package reader_test

import (
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// rangeTimeSource yields 4 rows per range of rb: the range held by 4
// subscribers one after the other, each validity [1000k, 1000(k+1))
// ending when the next starts.
type rangeTimeSource struct {
	rb  *rangeBench
	i   int
	row [5][]byte
}

func (s *rangeTimeSource) Columns() []string { return []string{"from", "to", "start", "end", "id"} }
func (s *rangeTimeSource) Line() int64       { return int64(s.i) + 1 }
func (s *rangeTimeSource) Close() error      { return nil }
func (s *rangeTimeSource) Next() ([][]byte, error) {
	if s.i >= 4*len(s.rb.lo) {
		return nil, io.EOF
	}
	j, k := s.i/4, int64(s.i%4)
	s.row = [5][]byte{strconv.AppendInt(nil, s.rb.lo[j], 10), strconv.AppendInt(nil, s.rb.hi[j], 10),
		strconv.AppendInt(nil, 1000*k, 10), strconv.AppendInt(nil, 1000*(k+1), 10), strconv.AppendInt(nil, int64(s.i), 10)}
	s.i++
	return s.row[:], nil
}

// BenchmarkRangeTime measures lookups of a random integer at a random
// time in a range table bounded in time (benchRows() rows: a quarter as
// many ranges, each held 4 times in turn), beside the naive alternative
// (sort.Search of the ranges in a Go slice, then a scan of the range's
// validities) and GetRange in a range table of as many ranges without
// time, in the same run. Every loop reads the id column's length.
func BenchmarkRangeTime(b *testing.B) {
	n := benchRows()
	rb := newRangeBench(n / 4)
	dir := b.TempDir()
	rtPath, rPath := filepath.Join(dir, "rt.lut"), filepath.Join(dir, "r.lut")
	if _, err := compile.File(&rangeTimeSource{rb: rb}, rtPath, compile.Options{Match: compile.MatchRange,
		RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end"}); err != nil {
		b.Fatal(err)
	}
	if _, err := compile.File(&rangeSource{rb: rb}, rPath, compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}}); err != nil {
		b.Fatal(err)
	}
	rt, err := reader.Open(rtPath)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	rtab, err := reader.Open(rPath)
	if err != nil {
		b.Fatal(err)
	}
	defer rtab.Close()
	r := rand.New(rand.NewPCG(9, 9))
	xs, ats := make([]int64, n), make([]int64, n)
	for i := range xs {
		xs[i], ats[i] = r.Int64N(rb.max), r.Int64N(4000)
	}
	b.Run("LookupRangeAt", func(b *testing.B) {
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if v, ok := rt.LookupRangeAt(xs[i%n], ats[i%n]); ok {
				sum += len(v.Col(4))
			}
		}
		sink = sum
	})
	b.Run("SortSearchScan", func(b *testing.B) {
		type lease struct {
			from, to int64
			id       []byte
		}
		leases := make([][4]lease, len(rb.lo))
		for j := range leases {
			for k := range 4 {
				leases[j][k] = lease{int64(1000 * k), int64(1000 * (k + 1)), strconv.AppendInt(nil, int64(4*j+k), 10)}
			}
		}
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			x, at := xs[i%n], ats[i%n]
			j := sort.Search(len(rb.lo), func(j int) bool { return rb.lo[j] > x }) - 1
			if j < 0 || rb.hi[j] < x {
				continue
			}
			for _, l := range leases[j] {
				if l.from <= at && at < l.to {
					sum += len(l.id)
					break
				}
			}
		}
		sink = sum
	})
	b.Run("GetRangeNoTime", func(b *testing.B) {
		var row reader.Row
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if rtab.GetRange(xs[i%n], &row) {
				sum += len(row.Col(2))
			}
		}
		sink = sum
	})
}
