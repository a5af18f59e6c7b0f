package serve

import (
	"sync/atomic"

	"github.com/lutkit/lutkit/tables"
)

// liveSet is the table set a server answers from, which the daemon
// switches to another set at a configuration reload (SetTables). prev is
// the set it was switched from, whose tables requests begun before the
// switch may still read.
type liveSet struct{ p, prev atomic.Pointer[tables.Set] }

func newLiveSet(set *tables.Set) *liveSet {
	l := &liveSet{}
	l.p.Store(set)
	return l
}

// Acquire returns a snapshot of the live set, with a reference taken.
func (l *liveSet) Acquire() *tables.Snapshot {
	_, sn := l.acquire()
	return sn
}

// acquire returns the live set and a snapshot of it. The set is read
// again after the snapshot is taken: when it is still the live one, the
// snapshot was taken before the daemon could close it (it switches the
// pointer first, then closes the old set), so its tables stay mapped
// until Release; otherwise the snapshot is dropped and the new set taken.
func (l *liveSet) acquire() (*tables.Set, *tables.Snapshot) {
	for {
		s := l.p.Load()
		sn := s.Acquire()
		if l.p.Load() == s {
			return s, sn
		}
		sn.Release()
	}
}

// Fault is tables.Set.Fault of the live set, or of the one before it
// for a request that began before the switch.
func (l *liveSet) Fault(r any) (string, bool) {
	if table, ok := l.p.Load().Fault(r); ok {
		return table, ok
	}
	return l.prev.Load().Fault(r)
}

// switchTo makes set the live set.
func (l *liveSet) switchTo(set *tables.Set) { l.prev.Store(l.p.Swap(set)) }

// SetTables makes the API answer from set from the next request on; the
// requests under way finish with the set they began with, which the
// caller may close once SetTables returns (their snapshots keep its
// tables mapped).
func (a *API) SetTables(set *tables.Set) { a.set.switchTo(set) }

// SetTables makes the server answer from set, as API.SetTables does.
func (s *Memcached) SetTables(set *tables.Set) { s.set.switchTo(set) }
