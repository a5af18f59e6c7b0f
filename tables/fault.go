package tables

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// A table file truncated or rewritten in place, instead of replaced by a
// rename, changes under its mapping: reading a page past the file's new
// end raises SIGBUS, which kills the process unless the goroutine runs
// with runtime/debug.SetPanicOnFault(true). Under it the fault is a panic
// whose value, recovered, Set.Fault identifies: it marks the table's
// version damaged, and lookups on a damaged version miss (Handle.LUT and
// Snapshot.LUT return nil) until a good new version is published. The
// watcher also marks a version damaged when it sees its file changed in
// place (same inode, other size or time), before any lookup faults.

// tableFault counts the faults and damage of one table.
type tableFault struct {
	faults uint64
	reason string
	at     time.Time
}

// Fault reports whether r, a value recovered from a panic raised under
// debug.SetPanicOnFault(true), is a memory fault inside the mapping of
// one of the set's tables. If it is, the table's version is marked
// damaged (logged once, counted in Stats) and table is its name; the
// caller may then look up again: the damaged version is no longer
// returned. If it is not, the caller should panic(r) again.
func (s *Set) Fault(r any) (table string, ok bool) {
	if s == nil {
		return "", false
	}
	addr, ok := faultAddr(r)
	if !ok {
		return "", false
	}
	e := s.entryAt(addr)
	if e == nil {
		return "", false
	}
	s.damage(e, fmt.Sprintf("memory fault reading the mapped file at offset %d (truncated or rewritten in place?)", addr-e.base()), true)
	return e.name, true
}

// faultAddr returns the address of a memory fault recovered under
// SetPanicOnFault.
func faultAddr(r any) (uintptr, bool) {
	re, ok := r.(runtime.Error)
	if !ok {
		return 0, false
	}
	a, ok := re.(interface{ Addr() uintptr })
	if !ok {
		return 0, false
	}
	return a.Addr(), true
}

// bytes returns the entry's file as mapped.
func (e *entry) bytes() []byte {
	switch {
	case e.lut != nil:
		return e.lut.Bytes()
	case e.mm != nil:
		return e.mm.Bytes()
	}
	return nil
}

func (e *entry) base() uintptr {
	b := e.bytes()
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// register records an opened entry, so that a fault can be traced back
// to it; unregister forgets it before it is unmapped.
func (s *Set) register(e *entry) {
	e.set = s
	s.mappedMu.Lock()
	s.mapped[e] = struct{}{}
	s.mappedMu.Unlock()
}

func (s *Set) unregister(e *entry) {
	s.mappedMu.Lock()
	delete(s.mapped, e)
	s.mappedMu.Unlock()
}

// entryAt returns the mapped entry whose file holds addr, or nil.
func (s *Set) entryAt(addr uintptr) *entry {
	s.mappedMu.Lock()
	defer s.mappedMu.Unlock()
	for e := range s.mapped {
		b := e.bytes()
		if len(b) == 0 {
			continue
		}
		base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if addr >= base && addr-base < uintptr(len(b)) {
			return e
		}
	}
	return nil
}

// damage marks e damaged. The first time, it is logged and the next load
// tries the file again (a good version published meanwhile, in place,
// replaces the damaged one).
func (s *Set) damage(e *entry, reason string, fault bool) {
	now := time.Now()
	s.statsMu.Lock()
	f := s.faults[e.name]
	if f == nil {
		f = &tableFault{}
		s.faults[e.name] = f
	}
	if fault {
		f.faults++
	}
	first := !e.damaged.Load()
	if first {
		e.damageReason = reason
		e.damaged.Store(true)
		f.reason, f.at = reason, now
	}
	s.statsMu.Unlock()
	if !first {
		return
	}
	s.log.Error("tables: table damaged: its lookups miss until a new version is published",
		"table", e.name, "file", e.path, "reason", reason, "generation", s.cur.Load().gen)
	s.recheck.Store(true)
	s.kick()
}

// checkInPlace marks old damaged when the file it was opened from changed
// in place: same inode, another size or modification time. A file renamed
// over it has another inode, and old's mapping is intact.
func (s *Set) checkInPlace(old *entry, path string, id fileID) {
	if old == nil || old.path != path || old.id == id || old.damaged.Load() {
		return
	}
	if old.id.dev != id.dev || old.id.ino != id.ino || old.id.ino == 0 {
		return
	}
	reason := "the file was modified in place"
	if id.size < old.id.size {
		reason = fmt.Sprintf("the file was truncated in place (%d bytes, %d mapped)", id.size, old.id.size)
	}
	s.damage(old, reason, false)
}
