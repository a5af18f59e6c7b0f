package compile

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/lutkit/lutkit/format"
)

// The index of a spilled table is bucketed (format/buckets.go): each of
// the spillParts partitions is deduplicated and placed in its buckets on
// its own, by as many goroutines as GOMAXPROCS allows, and its buckets are
// written to a file of their own, which the SLOTS section then copies in
// partition order. Each partition's result depends on its entries alone
// (in the order readSorted gives them), so the table is the same bytes
// whatever the number of goroutines.

// partResult is what building one partition gives.
type partResult struct {
	keys, buckets uint64
	dups          int64
	err           error
}

// partitionedHash builds the bucket table of the spilled entries,
// rehashing them under the next seed when a partition fails on a
// seed-dependent event. It returns the table and the seed that worked.
func (c *compiler) partitionedHash(data dataFile) (*format.Buckets, uint64, error) {
	seed := c.opts.Seed
	for try := 0; ; try++ {
		f, dups, err := c.buildPartitions(data)
		if err == nil {
			c.stats.Duplicates += dups
			return f, seed, nil
		}
		if !format.IsSeedError(err) || try == 7 {
			return nil, 0, err
		}
		seed++
		if err := c.respill(data, seed); err != nil {
			return nil, 0, err
		}
	}
}

// buildPartitions builds every partition; the error is that of the first
// partition that failed, in partition order.
func (c *compiler) buildPartitions(data dataFile) (*format.Buckets, int64, error) {
	var results [spillParts]partResult
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), spillParts) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b partBuffers
			for i := range next {
				results[i] = c.buildPartition(i, data, &b)
			}
		}()
	}
	for i := range spillParts {
		next <- i
	}
	close(next)
	wg.Wait()
	keys, buckets := make([]uint64, spillParts), make([]uint64, spillParts)
	var dups int64
	for i, r := range results {
		if r.err != nil {
			return nil, 0, r.err
		}
		keys[i], buckets[i] = r.keys, r.buckets
		dups += r.dups
	}
	f, err := format.NewBuckets(spillBits, keys, buckets)
	return f, dups, err
}

// partBuffers are a worker's buffers, reused from partition to partition.
type partBuffers struct {
	raw       []byte   // the partition file
	count     []uint32 // readSorted's buckets
	entries   []entry
	hashes    []uint64
	entries64 []uint64
	slots     []byte
}

// buildPartition deduplicates partition i, places its keys in its
// buckets and writes them to its slots file.
func (c *compiler) buildPartition(i int, data dataFile, b *partBuffers) partResult {
	if err := c.spill.readSorted(i, b); err != nil {
		return partResult{err: err}
	}
	entries, dups, err := dedupeSorted(b.entries, data, c.opts.OnDuplicate)
	if err != nil {
		return partResult{err: c.placeDuplicate(err)}
	}
	b.hashes, b.entries64 = b.hashes[:0], b.entries64[:0]
	for _, e := range entries {
		_, h := format.PartitionOf(e.hash, spillBits)
		b.hashes = append(b.hashes, h)
		b.entries64 = append(b.entries64, format.Slot(e.off, format.Fingerprint(e.hash)))
	}
	table, err := format.BuildBucketPartition(b.hashes, b.entries64)
	if err != nil {
		return partResult{err: fmt.Errorf("building the buckets of partition %d: %w", i, err)}
	}
	b.slots = b.slots[:0]
	for _, s := range table {
		b.slots = binary.LittleEndian.AppendUint64(b.slots, s)
	}
	if err := os.WriteFile(c.spill.slotsPath(i), b.slots, 0o600); err != nil {
		return partResult{err: fmt.Errorf("writing the slots of partition %d: %w", i, err)}
	}
	return partResult{keys: uint64(len(entries)), buckets: uint64(len(table) / format.BucketEntries), dups: dups}
}

// slotsPath is the file of partition i's slots.
func (s *spiller) slotsPath(i int) string { return filepath.Join(s.dir, fmt.Sprintf("slots-%03d", i)) }

// writeSlots copies the partitions' slots to w, in partition order.
func (c *compiler) writeSlots(w io.Writer) error {
	for i := range spillParts {
		f, err := os.Open(c.spill.slotsPath(i))
		if err != nil {
			return err
		}
		_, err = io.Copy(w, f)
		_ = f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// respill rehashes the spilled entries under seed, reading their keys
// back from DATA, into a new spill.
func (c *compiler) respill(data dataFile, seed uint64) error {
	s, err := newSpiller(filepath.Dir(c.spill.dir))
	if err != nil {
		return err
	}
	var es []entry
	var buf []byte
	for i := range spillParts {
		if es, err = c.spill.read(i, es); err != nil {
			s.remove()
			return err
		}
		for _, e := range es {
			r, err := data.record(e.off, buf)
			if err != nil {
				s.remove()
				return err
			}
			buf = r.Bytes()
			e.hash = format.HashKey(r.Key(), seed)
			if err := s.add(e); err != nil {
				s.remove()
				return err
			}
		}
	}
	if err := s.finish(); err != nil {
		s.remove()
		return err
	}
	c.spill.remove()
	c.spill = s
	return nil
}
