package kafka

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchPool lends kgo the record slices and decompression buffers of its
// fetches (kgo.WithPools), so that reading makes no garbage per record:
// the input copies a record's value into a batch, then recycles it
// (kgo.Record.Recycle), and once every record of a fetched record batch
// is recycled, kgo puts the batch's slices back here.
type fetchPool struct {
	recs slabs[kgo.Record]
	bufs slabs[byte]
}

var (
	_ kgo.PoolRecords         = (*fetchPool)(nil)
	_ kgo.PoolDecompressBytes = (*fetchPool)(nil)
)

// GetRecords returns a slice of capacity n or more.
func (p *fetchPool) GetRecords(n int) []kgo.Record { return p.recs.get(n) }

// PutRecords takes back a slice of records kgo has zeroed.
func (p *fetchPool) PutRecords(r []kgo.Record) { p.recs.put(r) }

// GetDecompressBytes returns a buffer for a compressed record batch's
// records: kgo grows it when they need more.
func (p *fetchPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	return p.bufs.get(4 * len(compressed))
}

// PutDecompressBytes takes back a buffer kgo has zeroed.
func (p *fetchPool) PutDecompressBytes(b []byte) { p.bufs.put(b) }

// slabBytes bounds the memory the slices of one size take while free:
// enough for the record batches of a fetch being read and of the next (a
// fetch of up to 1 MiB from each of a dozen partitions holds a few
// hundred batches), and at least a few slices.
const slabBytes = 32 << 20

// slabs are bounded free lists of slices by size: a power of two from 64
// up, so that one made for a request serves later ones of up to that
// size, and one of the sizes record batches take is found in one look.
type slabs[T any] struct {
	mu   sync.Mutex
	free [48][][]T // by bits.Len of the capacity minus one
}

func sizeClass(n int) int { return max(6, bits.Len(uint(n-1))) }

func (s *slabs[T]) get(n int) []T {
	c := sizeClass(n)
	if c >= len(s.free) {
		return make([]T, 0, n)
	}
	s.mu.Lock()
	if l := s.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		s.free[c] = l[:len(l)-1]
		s.mu.Unlock()
		return b[:0]
	}
	s.mu.Unlock()
	return make([]T, 0, 1<<c)
}

// put keeps b for its size class, if it is one of those get makes (kgo
// puts back a buffer it grew, too).
func (s *slabs[T]) put(b []T) {
	c := sizeClass(cap(b))
	if cap(b) != 1<<c || c >= len(s.free) {
		return
	}
	var t T
	keep := max(8, slabBytes/(cap(b)*int(unsafe.Sizeof(t))))
	s.mu.Lock()
	if len(s.free[c]) < keep {
		s.free[c] = append(s.free[c], b)
	}
	s.mu.Unlock()
}
