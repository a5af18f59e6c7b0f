package mmdb

import "unsafe"

// recordCacheBytes bounds the memory of a RecordCache.
const recordCacheBytes = 128 << 10

// RecordCache remembers the field values of the records a batch lookup
// decoded, by the record's data-section offset, so that addresses of
// other networks that share a record (most networks of a city database
// share theirs with others) are answered without decoding it again. It
// holds at most about 128 KiB. A RecordCache belongs to one goroutine and
// serves one Reader and one Fields at a time: given another, it forgets
// everything first, so it never answers from another file. It keeps that
// Reader from being collected until then. The zero RecordCache is empty
// and ready to use.
type RecordCache struct {
	r    *Reader
	f    *Fields
	nf   int
	mask uint
	offs []uint  // offset+1 of the record in each slot, 0 for none
	vals []Value // nf values per slot
}

// Reset forgets every record.
func (c *RecordCache) Reset() {
	c.r, c.f = nil, nil
	clear(c.offs)
	clear(c.vals)
}

// bind readies the cache for lookups in r of fields.
func (c *RecordCache) bind(r *Reader, f *Fields) {
	if c.r == r && c.f == f {
		return
	}
	nf := len(f.paths)
	if nf != c.nf || c.offs == nil {
		n := uint(1)
		for n*2*(uint(nf)*uint(unsafe.Sizeof(Value{}))+8) <= recordCacheBytes {
			n *= 2
		}
		c.nf, c.mask = nf, n-1
		c.offs = make([]uint, n)
		c.vals = make([]Value, n*uint(nf))
	} else {
		clear(c.offs)
		clear(c.vals)
	}
	c.r, c.f = r, f
}

// slot returns the slot of the record at off.
func (c *RecordCache) slot(off uint) uint {
	return uint(uint64(off)*0x9E3779B97F4A7C15>>32) & c.mask
}

// get copies the values of the record at off to out and reports whether
// the cache held them.
func (c *RecordCache) get(off uint, out []Value) bool {
	i := c.slot(off)
	if c.offs[i] != off+1 {
		return false
	}
	// A loop of assignments: copy of values that hold pointers costs a
	// call to typedslicecopy, several times the moves.
	vals := c.vals[i*uint(c.nf) : (i+1)*uint(c.nf)]
	for j := range vals { //nolint:staticcheck // see above: copy costs a typedslicecopy call
		out[j] = vals[j]
	}
	return true
}

// put remembers the values of the record at off.
func (c *RecordCache) put(off uint, vals []Value) {
	i := c.slot(off)
	c.offs[i] = off + 1
	dst := c.vals[i*uint(c.nf) : (i+1)*uint(c.nf)]
	for j := range dst {
		dst[j] = vals[j]
	}
}
