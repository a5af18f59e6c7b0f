package format

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// FindPos is Find that also returns the key's MPHF position: the group of
// a time-bounded table's key.
func (f *Finder) FindPos(key []byte) (uint64, Record, bool) {
	m := &f.mphf
	if m.n == 0 {
		return 0, Record{}, false
	}
	h := f.hasher.Hash(key)
	pos := m.Index(h)
	r, ok := f.Match(f.Slot(pos), h, key)
	return pos, r, ok
}

// ParseTime reads a validity bound: RFC 3339 (time.RFC3339Nano) or a
// number of seconds since the Unix epoch (an optional sign and digits).
// An empty value is an open end: open is then true.
func ParseTime(v []byte) (sec int64, open bool, err error) {
	if len(v) == 0 {
		return 0, true, nil
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, false, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(v))
	if err != nil {
		return 0, false, fmt.Errorf("%q is neither an RFC 3339 time nor epoch seconds", v)
	}
	return t.Unix(), false, nil
}

// Validity returns the inclusive bounds [from, to-1] of the half-open
// validity [from, to) given by two bound values (ParseTime): an open
// from is math.MinInt64, an open to math.MaxInt64. A validity that holds
// no second is an error.
func Validity(from, to []byte) (lo, hi int64, err error) {
	lo, openFrom, err := ParseTime(from)
	if err != nil {
		return 0, 0, fmt.Errorf("valid_from: %w", err)
	}
	if openFrom {
		lo = math.MinInt64
	}
	t, openTo, err := ParseTime(to)
	if err != nil {
		return 0, 0, fmt.Errorf("valid_to: %w", err)
	}
	hi = math.MaxInt64
	if !openTo {
		if t <= lo {
			return 0, 0, fmt.Errorf("valid_to %s is not after valid_from %s: the row is never valid", to, from)
		}
		hi = t - 1
	}
	return lo, hi, nil
}
