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

// maxRead is the most rows and nested values (nestedValues) a reader
// of an Arrow file of size bytes produces: memLimit(size). Each row, and
// each value of a nested value, is at least a byte of the text the
// reader gives (a field, a separator), so this bounds the work of reading
// a file as memLimit bounds what it holds at once. A file holds its rows
// in at least a byte each unless it compresses them beyond 256:1, which
// a column of distinct keys does not: 1,000,000 rows of small integers
// (8 MB) may be 2 G. Run-end encoding, a dictionary or a list of nulls
// holds any number of values in a few bytes, and a damaged length claims
// any number of rows.
func maxRead(size int64) int64 {
	return memLimit(size)
}

// readBudget counts the rows and nested values a reader of a file of
// size bytes may still produce.
type readBudget struct {
	left, size int64
}

func newReadBudget(size int64) *readBudget {
	return &readBudget{left: maxRead(size), size: size}
}

// take counts n rows or values read, or returns an error when they pass
// the budget.
func (b *readBudget) take(n int64, what string) error {
	if b == nil {
		return nil
	}
	if n > b.left {
		b.left = 0
		return fmt.Errorf("more %s than a file of %d bytes may hold", what, b.size)
	}
	b.left -= n
	return nil
}

// limitAllocator is a memory.Allocator that holds at most limit bytes at
// once. An allocation that would pass the limit panics with a
// *memLimitError, which the readers (arrow-go's, and those of this
// package) report as corrupt data: arrow-go allocates by lengths the file
// gives (the uncompressed length of a compressed buffer) before it reads
// what they measure. peak is the most it held at once.
type limitAllocator struct {
	mem        memory.Allocator
	limit      int64
	held, peak atomic.Int64
}

func newLimitAllocator(limit int64) *limitAllocator {
	return &limitAllocator{mem: memory.DefaultAllocator, limit: limit}
}

// memLimitError is the panic of an allocation refused by limitAllocator.
type memLimitError struct {
	size, held, limit int64
}

func (e *memLimitError) Error() string {
	return fmt.Sprintf("a length in the file asks for %d bytes, more than the %d bytes a file of its size may decode to (%d held); if the file is not damaged, write it in smaller record batches", e.size, e.limit, e.held)
}

// take counts n more bytes held, or panics when they pass the limit.
func (a *limitAllocator) take(n int64) {
	held := a.held.Add(n)
	if n > 0 && held > a.limit {
		a.held.Add(-n)
		panic(&memLimitError{size: n, held: held - n, limit: a.limit})
	}
	for p := a.peak.Load(); held > p && !a.peak.CompareAndSwap(p, held); p = a.peak.Load() {
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
