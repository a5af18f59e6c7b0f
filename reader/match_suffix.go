package reader

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/lutkit/lutkit/format"
)

// findSuffix returns the row of the longest suffix of key in a suffix
// table: it probes key's label suffixes, longest first, skipping the
// label counts no key has. It does not allocate for a key of up to
// format.MaxSuffixQuery bytes.
func (t *Table) findSuffix(key []byte) (format.Record, bool) {
	var buf [format.MaxSuffixQuery]byte
	q := format.SuffixQuery(buf[:0], key)
	labels := t.labels
	n := format.Labels(q)
	for i := 0; ; n-- {
		bit := format.LabelBit(n)
		if labels&(bit|(bit-1)) == 0 {
			return format.Record{}, false // no key has so few labels
		}
		if labels&bit != 0 {
			if r, ok := t.find(q[i:]); ok {
				return r, true
			}
		}
		j := bytes.IndexByte(q[i:], '.')
		if j < 0 {
			return format.Record{}, false
		}
		i += j + 1
	}
}

// matchSuffix is Match in a suffix table: every suffix of key that is a
// key of the table, the longest first. In a table bounded in time each
// such key gives its rows valid at the time at (suffix_time.go).
func (t *Table) matchSuffix(key []byte, at int64, out []View) int {
	var buf [format.MaxSuffixQuery]byte
	q := format.SuffixQuery(buf[:0], key)
	labels := t.labels
	n, found := format.Labels(q), 0
	for i := 0; found < len(out); n-- {
		bit := format.LabelBit(n)
		if labels&(bit|(bit-1)) == 0 {
			break
		}
		if labels&bit != 0 {
			if t.iv != nil {
				found += t.suffixAt(q[i:], at, out[found:])
			} else if r, ok := t.find(q[i:]); ok {
				out[found] = View{r}
				found++
			}
		}
		j := bytes.IndexByte(q[i:], '.')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return found
}

// suffixKey checks that a key of a suffix table is in normal form.
func (c *matchCheck) suffixKey(k []byte) error {
	var buf [format.MaxSuffixQuery]byte
	n, err := format.NormalizeSuffix(buf[:0], k)
	if err != nil {
		return fmt.Errorf("suffix key %q: %w", k, err)
	}
	if !bytes.Equal(n, k) {
		return fmt.Errorf("suffix key %q is not normalised (%q)", k, n)
	}
	// Atomic: the partitions of a bucketed index are verified in
	// parallel (verifyBuckets).
	atomic.OrUint64(&c.labels, format.LabelBit(format.Labels(k)))
	return nil
}

// suffixDone checks the SUFFIX section's label mask against the keys.
func (c *matchCheck) suffixDone() error {
	if c.labels != c.t.labels {
		s := c.t.sections[format.SectionSuffix]
		return format.Corruptf(int64(s.Off+8), "SUFFIX label mask %#x, the keys give %#x", c.t.labels, c.labels)
	}
	return nil
}
