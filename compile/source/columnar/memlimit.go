package columnar

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A reader holds, at once, at most memLimit(size) bytes decoded from a
// file of size bytes: a fixed floor, for the small files, and then a
// multiple of the size. The multiple leaves room for compression (an
// Arrow IPC body compressed with LZ4 or ZSTD, a compressed Parquet page):
// a table with a key column rarely compresses beyond 10:1, and a length
// in a damaged file that asks for more is refused instead of allocated.
const (
	memLimitFloor  = 16 << 20
	memLimitFactor = 256
)

// memLimit is the most a reader of a file of size bytes holds at once.
func memLimit(size int64) int64 {
	return memLimitFloor + memLimitFactor*max(size, 0)
}

// maxNestedValues is the most values a nested value (a list, a map, a
// struct) of a file of size bytes may hold: 64 Ki, and one more for each
// byte of the file. arrow-go builds its text form whole, allocating tens
// of bytes a value.
func maxNestedValues(size int64) int64 {
	return memLimit(size) / memLimitFactor
}

// limitAllocator is a memory.Allocator that holds at most limit bytes at
// once. An allocation that would pass the limit panics with a
// *memLimitError, which the readers (arrow-go's, and those of this
// package) report as corrupt data: arrow-go allocates by lengths the file
// gives (the uncompressed length of a compressed buffer) before it reads
// what they measure.
type limitAllocator struct {
	mem   memory.Allocator
	limit int64
	held  atomic.Int64
}

func newLimitAllocator(limit int64) *limitAllocator {
	return &limitAllocator{mem: memory.DefaultAllocator, limit: limit}
}

// memLimitError is the panic of an allocation refused by limitAllocator.
type memLimitError struct {
	size, held, limit int64
}

func (e *memLimitError) Error() string {
	return fmt.Sprintf("a length in the file asks for %d bytes, more than the %d bytes a file of its size may decode to (%d held)", e.size, e.limit, e.held)
}

// take counts n more bytes held, or panics when they pass the limit.
func (a *limitAllocator) take(n int64) {
	if held := a.held.Add(n); n > 0 && held > a.limit {
		a.held.Add(-n)
		panic(&memLimitError{size: n, held: held - n, limit: a.limit})
	}
}

func (a *limitAllocator) Allocate(size int) []byte {
	a.take(int64(size))
	return a.mem.Allocate(size)
}

func (a *limitAllocator) Reallocate(size int, b []byte) []byte {
	a.take(int64(size - len(b)))
	return a.mem.Reallocate(size, b)
}

func (a *limitAllocator) Free(b []byte) {
	a.held.Add(-int64(len(b)))
	a.mem.Free(b)
}
