package reader_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// rangeBench is the data of BenchmarkRange: n disjoint ranges of random
// widths (1 to 64) with gaps, as a table and as a sorted slice.
type rangeBench struct {
	lo, hi []int64
	max    int64
}

func newRangeBench(n int) *rangeBench {
	r := rand.New(rand.NewPCG(3, 3))
	rb := &rangeBench{lo: make([]int64, n), hi: make([]int64, n)}
	at := int64(0)
	for i := range n {
		at += r.Int64N(8)
		rb.lo[i] = at
		at += r.Int64N(64)
		rb.hi[i] = at
		at++
	}
	rb.max = at
	return rb
}

var sink int

// leaseSource yields n leases: n/4 addresses, each held by 4 users one
// after the other, each lease ending when the next starts.
type leaseSource struct {
	n, i int
	row  [4][]byte
}

func (s *leaseSource) Columns() []string { return []string{"ip", "start", "end", "user"} }
func (s *leaseSource) Line() int64       { return int64(s.i) + 1 }
func (s *leaseSource) Close() error      { return nil }
func (s *leaseSource) Next() ([][]byte, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	ip, k := s.i/4, int64(s.i%4)
	s.row = [4][]byte{leaseIP(ip), strconv.AppendInt(nil, 1000*k, 10), strconv.AppendInt(nil, 1000*(k+1), 10), strconv.AppendInt(nil, int64(s.i), 10)}
	s.i++
	return s.row[:], nil
}

func leaseIP(i int) []byte { return fmt.Appendf(nil, "10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }

// BenchmarkLease measures GetAt in a lease table of benchRows() leases
// (a quarter as many addresses, 4 leases each) beside the naive
// alternative: a Go map from address to its leases, scanned.
func BenchmarkLease(b *testing.B) {
	n := benchRows()
	path := filepath.Join(b.TempDir(), "l.lut")
	if _, err := compile.File(&leaseSource{n: n}, path, compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end"}); err != nil {
		b.Fatal(err)
	}
	tbl, err := reader.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Close()
	type lease struct {
		from, to int64
		user     []byte
	}
	m := map[string][]lease{}
	for i := range n {
		ip, k := string(leaseIP(i/4)), int64(i%4)
		m[ip] = append(m[ip], lease{1000 * k, 1000 * (k + 1), strconv.AppendInt(nil, int64(i), 10)})
	}
	r := rand.New(rand.NewPCG(5, 5))
	keys := make([][]byte, n)
	ats := make([]int64, n)
	for i := range keys {
		keys[i], ats[i] = leaseIP(r.IntN(n/4)), r.Int64N(4000)
	}
	b.Run("GetAt", func(b *testing.B) {
		var row reader.Row
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if tbl.GetAt(keys[i%n], ats[i%n], &row) {
				sum += len(row.Col(3))
			}
		}
		sink = sum
	})
	b.Run("MapScan", func(b *testing.B) {
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			at := ats[i%n]
			for _, l := range m[string(keys[i%n])] {
				if l.from <= at && at < l.to {
					sum += len(l.user)
					break
				}
			}
		}
		sink = sum
	})
}

// rangeSource yields the ranges as rows from,to,id.
type rangeSource struct {
	rb  *rangeBench
	i   int
	row [3][]byte
	buf []byte
}

func (s *rangeSource) Columns() []string { return []string{"from", "to", "id"} }
func (s *rangeSource) Line() int64       { return int64(s.i) + 1 }
func (s *rangeSource) Close() error      { return nil }
func (s *rangeSource) Next() ([][]byte, error) {
	if s.i >= len(s.rb.lo) {
		return nil, io.EOF
	}
	s.buf = strconv.AppendInt(s.buf[:0], s.rb.lo[s.i], 10)
	n1 := len(s.buf)
	s.buf = strconv.AppendInt(s.buf, s.rb.hi[s.i], 10)
	n2 := len(s.buf)
	s.buf = strconv.AppendInt(s.buf, int64(s.i), 10)
	s.row = [3][]byte{s.buf[:n1:n1], s.buf[n1:n2:n2], s.buf[n2:]}
	s.i++
	return s.row[:], nil
}

// BenchmarkRange measures lookups of random integers in a range table of
// benchRows() ranges (GetRange, MatchRange, and a time-bounded table's
// GetAt of one-lease keys), beside a binary search (sort.Search) of the
// same ranges held in Go slices and an exact Get in a table of as many
// rows, in the same run. Every loop reads the id column's length.
func BenchmarkRange(b *testing.B) {
	n := benchRows()
	rb := newRangeBench(n)
	path := filepath.Join(b.TempDir(), "r.lut")
	if _, err := compile.File(&rangeSource{rb: rb}, path, compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}}); err != nil {
		b.Fatal(err)
	}
	tbl, err := reader.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Close()
	exact, err := reader.Open(benchTable(b))
	if err != nil {
		b.Fatal(err)
	}
	defer exact.Close()
	r := rand.New(rand.NewPCG(9, 9))
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = r.Int64N(rb.max)
	}
	keys := randomKeys(exact.Rows(), n, false)
	b.Run("GetRange", func(b *testing.B) {
		var row reader.Row
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if tbl.GetRange(xs[i%len(xs)], &row) {
				sum += len(row.Col(2))
			}
		}
		sink = sum
	})
	b.Run("MatchRange", func(b *testing.B) {
		out := make([]reader.View, 4)
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for _, v := range out[:tbl.MatchRange(xs[i%len(xs)], out)] {
				sum += len(v.Col(2))
			}
		}
		sink = sum
	})
	b.Run("SortSearch", func(b *testing.B) {
		// The naive alternative: the bounds in two Go slices, searched.
		ids := make([][]byte, n)
		for i := range ids {
			ids[i] = strconv.AppendInt(nil, int64(i), 10)
		}
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			x := xs[i%len(xs)]
			j := sort.Search(len(rb.lo), func(j int) bool { return rb.lo[j] > x }) - 1
			if j >= 0 && rb.hi[j] >= x {
				sum += len(ids[j])
			}
		}
		sink = sum
	})
	b.Run("ExactGet", func(b *testing.B) {
		var row reader.Row
		sum := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if exact.Get(keys[i%len(keys)], &row) {
				sum += len(row.Col(1))
			}
		}
		sink = sum
	})
}
