// Package queue is enrichd's persistent queue: an append-only store of
// records (a buffer of enriched lines each) in numbered segment files,
// read back in order and removed once delivered.
//
// One goroutine appends (Append, Sync), one reads (Next), and any
// goroutine reports a record delivered (Done). Each record carries a
// checksum of its header and one of its payload: a damaged record is
// reported (OnDamage) and skipped, never returned. Delivered records are
// remembered in a small cursor file, so that a restart replays from the
// first record not known delivered; a segment file is removed once
// every record in it is delivered.
package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/internal/corrupt"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// ErrFull is Append's answer when the record does not fit in MaxBytes:
// wait for Freed and append it again.
var ErrFull = errors.New("queue full")

// ErrTooLarge is Append's answer for a record that can never be
// appended: over MaxRecord, or larger than MaxBytes holds with the header
// of a segment. Appending it again fails again.
var ErrTooLarge = errors.New("record too large for the queue")

// ErrEmpty is Next's answer when every record written has been read:
// wait for Written.
var ErrEmpty = errors.New("queue empty")

// Options configure a Store.
type Options struct {
	Dir      string
	MaxBytes int64
	// SegmentBytes is the size from which a new segment is begun; 0:
	// MaxBytes/64, between 1 MiB and 64 MiB. It is at most MaxBytes/4:
	// space is freed a segment at a time, and the segment written to is
	// never freed, so that MaxBytes holds several. The file system must
	// have room for more than one.
	SegmentBytes int64
	// OnDamage is told of every span of a segment skipped as damaged, with
	// the segment's path: from Next, and from Open for the record torn by
	// a crash at the end of the last segment.
	OnDamage func(path string, d Damage)
}

// Stats are a store's counters.
type Stats struct {
	Bytes, MaxBytes int64 // in the segment files, and the bound
	Segments        int
	Full            bool // the last Append found no room
	// Written, Read, Delivered are events appended, returned by Next,
	// reported delivered, since Open; Synced those of Written that a
	// Sync made durable.
	Written, Synced, Read, Delivered uint64
	Syncs                            uint64
	// Damaged are the spans skipped as damaged, DamagedBytes their bytes
	// and DamagedEvents the events their headers said they held; Torn the
	// spans cut short by a crash.
	Damaged, DamagedBytes, DamagedEvents, Torn uint64
}

type segment struct {
	id     uint64
	size   int64 // bytes written (committed)
	sealed bool
}

// flight is a record read and not yet delivered (or a span skipped).
type flight struct {
	seg    uint64
	end    int64
	events uint32
	done   bool
}

// Store is an open queue directory.
type Store struct {
	opts   Options
	unlock func() // of the directory's lock, held while the store is open: one store per directory

	mu     sync.Mutex
	closed bool
	segs   []*segment // oldest first; the last is written to
	used   int64
	full   bool

	// The writer's side.
	wf       *os.File
	unsynced []*os.File // sealed segments written since the last Sync
	dirty    bool       // a segment was created since the last Sync

	// The reader's side.
	rid  uint64
	roff int64
	rf   *os.File

	// Delivery: flights[0] is the record of ID head.
	flights        []flight
	head           uint64
	delSeg, delOff uint64
	cursor         *os.File
	cursorAt       time.Time
	// spares are delivered segment files kept to be written again: a
	// file whose blocks are allocated (and whose pages are cached) costs
	// the kernel a fraction of a new one's.
	spares []string

	written, freed chan struct{}

	nWritten, nSynced, nRead, nDelivered, nSyncs atomic.Uint64
	nDamaged, nDamagedBytes, nDamagedEv, nTorn   atomic.Uint64
}

const (
	segSuffix   = ".seg"
	spareSuffix = ".spare"
	// maxSpares is how many delivered segment files are kept for reuse.
	maxSpares  = 2
	lockName   = "lock"
	cursorName = "cursor"
	cursorSize = 24
	// cursorEvery is how often at most the cursor file is rewritten
	// while records are delivered (and at each segment removed).
	cursorEvery = 100 * time.Millisecond
)

func segName(id uint64) string { return fmt.Sprintf("%016x%s", id, segSuffix) }

func (s *Store) path(id uint64) string { return filepath.Join(s.opts.Dir, segName(id)) }

// Open opens (creating it if need be) the queue in opts.Dir. Records
// left by an earlier run are read first; appends go to a new segment.
// The last segment an earlier run wrote is cut after its last whole
// record (see cutTail). The directory is locked until Close: a second
// Open of it fails, in this process or another.
func Open(opts Options) (st *Store, err error) {
	if opts.MaxBytes <= 0 {
		return nil, errors.New("queue: MaxBytes must be positive")
	}
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = min(max(opts.MaxBytes/64, 1<<20), 64<<20)
	}
	opts.SegmentBytes = min(opts.SegmentBytes, opts.MaxBytes/4)
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, err
	}
	s := &Store{opts: opts, written: make(chan struct{}, 1), freed: make(chan struct{}, 1)}
	if s.unlock, err = fsutil.Lock(filepath.Join(opts.Dir, lockName)); errors.Is(err, fsutil.ErrLocked) {
		return nil, fmt.Errorf("queue: %s is used by another enrichd (it holds %s): one enrichd per queue directory", opts.Dir, filepath.Join(opts.Dir, lockName))
	} else if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.closeFiles()
		}
	}()
	ents, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, spareSuffix) {
			if p := filepath.Join(opts.Dir, name); reuseFiles && len(s.spares) < maxSpares {
				s.spares = append(s.spares, p)
			} else {
				_ = os.Remove(p)
			}
			continue
		}
		if !strings.HasSuffix(name, segSuffix) {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 16, 64)
		if err != nil || name != segName(id) {
			return nil, fmt.Errorf("queue: %s: not a segment file of the queue (remove it)", filepath.Join(opts.Dir, name))
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		if err := checkVersion(filepath.Join(opts.Dir, name)); err != nil {
			return nil, err
		}
		s.segs = append(s.segs, &segment{id: id, size: fi.Size(), sealed: true})
		s.used += fi.Size()
	}
	slices.SortFunc(s.segs, func(a, b *segment) int { return cmpU64(a.id, b.id) })
	next := uint64(1)
	if n := len(s.segs); n > 0 {
		last := s.segs[n-1]
		size, err := s.cutTail(last.id)
		if err != nil {
			return nil, err
		}
		s.used += size - last.size
		last.size = size
		next = last.id + 1
	}
	if s.cursor, err = os.OpenFile(filepath.Join(opts.Dir, cursorName), os.O_RDWR|os.O_CREATE, 0o640); err != nil {
		return nil, err
	}
	cseg, coff := s.readCursor()
	// The numbers go on after the cursor's too: a segment numbered anew
	// (its files removed by hand) would be taken as delivered.
	next = max(next, cseg+1)
	s.startAt(cseg, coff)
	if err := s.newSegment(next); err != nil {
		return nil, err
	}
	s.dirty = true
	return s, nil
}

// checkVersion refuses the segment file at path if another version of
// the queue wrote it: its records would read as damage and be removed.
func checkVersion(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var b [len(segMagic)]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := otherVersion(b[:n]); err != nil {
		return fmt.Errorf("queue: %s: %w: deliver it with the enrichd that wrote it, or move the directory aside; nothing was removed", path, err)
	}
	return nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readCursor returns the delivered position the cursor file holds (0, 0
// when none or damaged: replay from the oldest segment).
func (s *Store) readCursor() (uint64, int64) {
	var b [cursorSize]byte
	if n, _ := s.cursor.ReadAt(b[:], 0); n < cursorSize {
		return 0, 0
	}
	if binary.LittleEndian.Uint64(b[16:]) != xxh3.Hash(b[:16]) {
		return 0, 0
	}
	return binary.LittleEndian.Uint64(b[:]), int64(binary.LittleEndian.Uint64(b[8:]))
}

// startAt sets the reader at delivered position (seg, off): segments
// before it are delivered and removed.
func (s *Store) startAt(seg uint64, off int64) {
	for len(s.segs) > 0 && (s.segs[0].id < seg || s.segs[0].id == seg && off >= s.segs[0].size) {
		s.used -= s.segs[0].size
		_ = os.Remove(s.path(s.segs[0].id))
		s.segs = s.segs[1:]
	}
	s.roff = segHeaderSize
	if len(s.segs) > 0 {
		s.rid = s.segs[0].id
		if s.rid == seg && off > segHeaderSize {
			s.roff = off
		}
	}
	s.delSeg, s.delOff = seg, uint64(off)
}

// newSegment creates segment id, from a spare file if there is one, and
// makes it the one written to.
func (s *Store) newSegment(id uint64) error {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	s.mu.Lock()
	if n := len(s.spares); n > 0 {
		if os.Rename(s.spares[n-1], s.path(id)) == nil {
			// What it held past what is written fails its checksums,
			// and lies past the end mark.
			flags = os.O_RDWR
		}
		s.spares = s.spares[:n-1]
	}
	s.mu.Unlock()
	f, err := os.OpenFile(s.path(id), flags, 0o640)
	if err != nil {
		return err
	}
	var h [segHeaderSize + recHeaderSize]byte // and the end mark
	putSegHeader(h[:], id)
	if _, err := f.WriteAt(h[:], 0); err != nil {
		f.Close()
		_ = os.Remove(s.path(id))
		return err
	}
	s.dirty = true
	s.mu.Lock()
	if len(s.segs) == 0 {
		s.rid, s.roff = id, segHeaderSize
	}
	s.segs = append(s.segs, &segment{id: id, size: segHeaderSize})
	s.used += segHeaderSize
	s.mu.Unlock()
	s.wf = f
	return nil
}

// wseg is the segment written to; s.mu held.
func (s *Store) wseg() *segment { return s.segs[len(s.segs)-1] }

// MaxPayload is the largest payload Append takes: a larger one fails
// with ErrTooLarge.
func (s *Store) MaxPayload() int {
	return int(min(MaxRecord, s.opts.MaxBytes-segHeaderSize-recHeaderSize))
}

// Append writes a record of payload p, holding events lines. On an error
// (ErrFull, or the file system's) nothing is appended: append the same
// record again later (a partly written one is overwritten). A record that
// can never be appended fails with ErrTooLarge.
func (s *Store) Append(p []byte, events int) error {
	need := int64(recHeaderSize + len(p))
	if len(p) > MaxRecord {
		return fmt.Errorf("queue: %w: %d bytes, over the limit of %d; it is not appended: split it", ErrTooLarge, len(p), MaxRecord)
	}
	if need > s.opts.MaxBytes-segHeaderSize {
		return fmt.Errorf("queue: %w: %d bytes with its header, more than the %d that max_bytes (%d) holds besides a segment's header; it is not appended: split it, or raise max_bytes",
			ErrTooLarge, need, s.opts.MaxBytes-segHeaderSize, s.opts.MaxBytes)
	}
	s.mu.Lock()
	w := s.wseg()
	off := w.size
	roll := off+need > s.opts.SegmentBytes && off > segHeaderSize
	if s.used+need > s.opts.MaxBytes {
		s.full = true
		s.mu.Unlock()
		if roll {
			// The record goes in the next segment: this one is sealed
			// now, so that it is removed once delivered (the one written
			// to never is) and the record finds its room.
			if err := s.roll(w); err != nil {
				return err
			}
		}
		return ErrFull
	}
	s.full = false
	s.mu.Unlock()
	if roll {
		if err := s.roll(w); err != nil {
			return err
		}
		off = segHeaderSize
	}
	s.mu.Lock()
	id := s.wseg().id
	s.mu.Unlock()
	var h [recHeaderSize]byte
	putRecHeader(h[:], p, events, id)
	if err := writeRecord(s.wf, h[:], p, off); err != nil {
		s.dropSpares() // the file system may be full: give it their space
		return err
	}
	s.mu.Lock()
	s.wseg().size += need
	s.used += need
	s.mu.Unlock()
	s.nWritten.Add(uint64(events))
	signal(s.written)
	return nil
}

// roll seals segment w (cut back to what was committed) and begins the
// next one; the reader is told (Written), to read past w.
func (s *Store) roll(w *segment) error {
	if err := s.wf.Truncate(w.size); err != nil {
		return err
	}
	old := s.wf
	if err := s.newSegment(w.id + 1); err != nil {
		s.wf = old
		return err
	}
	s.mu.Lock()
	w.sealed = true
	s.mu.Unlock()
	s.unsynced = append(s.unsynced, old)
	signal(s.written)
	return nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Sync makes what was appended durable: the segments written are
// fsynced, and the directory if a segment was created.
func (s *Store) Sync() error {
	written := s.nWritten.Load() // one goroutine calls Append and Sync
	for len(s.unsynced) > 0 {
		if err := s.unsynced[0].Sync(); err != nil {
			return err
		}
		s.unsynced[0].Close()
		s.unsynced = s.unsynced[1:]
	}
	if err := s.wf.Sync(); err != nil {
		return err
	}
	if s.dirty {
		if err := fsutil.SyncDir(s.opts.Dir); err != nil {
			return err
		}
		s.dirty = false
	}
	s.nSynced.Store(written)
	s.nSyncs.Add(1)
	return nil
}

// NoSync closes the sealed segments' files without syncing them: with
// no Sync ever called, call it after each Append.
func (s *Store) NoSync() {
	for _, f := range s.unsynced {
		f.Close()
	}
	s.unsynced = s.unsynced[:0]
}

// Written is signalled after an Append.
func (s *Store) Written() <-chan struct{} { return s.written }

// Freed is signalled when a segment is removed.
func (s *Store) Freed() <-chan struct{} { return s.freed }

// Record is a record Next returned.
type Record struct {
	ID     uint64 // to report it delivered (Done)
	Events int
	Data   []byte
}

// Next reads the next record into dst's storage: ErrEmpty when every
// record written has been read. Damaged spans on the way are reported
// (Options.OnDamage) and skipped.
func (s *Store) Next(dst []byte) (Record, error) {
	for {
		s.mu.Lock()
		seg := s.seg(s.rid)
		if seg == nil {
			s.mu.Unlock()
			return Record{}, ErrEmpty
		}
		limit, sealed := seg.size, seg.sealed
		s.mu.Unlock()
		if s.rf == nil {
			f, err := os.Open(s.path(s.rid))
			if err != nil {
				return Record{}, err
			}
			s.rf = f
			if s.roff == segHeaderSize {
				var h [segHeaderSize]byte
				n, _ := f.ReadAt(h[:], 0)
				if err := checkSegHeader(h[:n], s.rid); err != nil {
					s.damaged(s.rid, Damage{Off: 0, Len: 0, Err: err})
				}
			}
		}
		if s.roff >= limit {
			if !sealed {
				return Record{}, ErrEmpty
			}
			s.rf.Close()
			s.rf = nil
			old := s.rid
			s.mu.Lock()
			if nxt := s.after(old); nxt != nil {
				s.rid, s.roff = nxt.id, segHeaderSize
			}
			s.mu.Unlock()
			s.skip(old, limit)
			continue
		}
		var h [recHeaderSize]byte
		rh, ok := recHeader{}, false
		if limit-s.roff >= recHeaderSize {
			if _, err := s.rf.ReadAt(h[:], s.roff); err != nil {
				return Record{}, err
			}
			rh, ok = parseRecHeader(h[:], s.rid)
		}
		need := int64(recHeaderSize) + int64(rh.length)
		if !ok || s.roff+need > limit {
			if err := s.resync(limit); err != nil {
				return Record{}, err
			}
			continue
		}
		dst = slices.Grow(dst[:0], int(rh.length))[:rh.length]
		if _, err := s.rf.ReadAt(dst, s.roff+recHeaderSize); err != nil {
			return Record{}, err
		}
		if xxh3.Hash(dst) != rh.sum {
			s.damaged(s.rid, Damage{Off: s.roff, Len: need, Events: int(rh.events),
				Err: corrupt.At("queue record", s.roff, "payload checksum mismatch (%d events)", rh.events)})
			s.roff += need
			s.skip(s.rid, s.roff)
			continue
		}
		s.roff += need
		s.nRead.Add(uint64(rh.events))
		s.mu.Lock()
		id := s.head + uint64(len(s.flights))
		s.flights = append(s.flights, flight{seg: s.rid, end: s.roff, events: rh.events})
		s.mu.Unlock()
		return Record{ID: id, Events: int(rh.events), Data: dst}, nil
	}
}

// resync skips a damaged span at the reader's offset: to the next
// record that checks, or to limit.
func (s *Store) resync(limit int64) error {
	b := make([]byte, limit-s.roff)
	if _, err := s.rf.ReadAt(b, s.roff); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	found := false
	Scan(b, s.roff, s.rid, func(Entry) { found = true }, func(d Damage) {
		if !found {
			s.damaged(s.rid, d)
			s.roff += d.Len
		}
	})
	s.skip(s.rid, s.roff)
	return nil
}

// damaged counts and reports a span of segment id skipped.
func (s *Store) damaged(id uint64, d Damage) {
	if d.Torn {
		s.nTorn.Add(1)
	} else {
		s.nDamaged.Add(1)
		s.nDamagedBytes.Add(uint64(d.Len))
		s.nDamagedEv.Add(uint64(d.Events))
	}
	if s.opts.OnDamage != nil {
		s.opts.OnDamage(s.path(id), d)
	}
}

// skip records the reader's passing over what ends at end of segment
// seg without a record to deliver.
func (s *Store) skip(seg uint64, end int64) {
	s.mu.Lock()
	s.flights = append(s.flights, flight{seg: seg, end: end, done: true})
	s.advance()
	s.mu.Unlock()
}

// seg returns segment id, or nil; s.mu held.
func (s *Store) seg(id uint64) *segment {
	for _, g := range s.segs {
		if g.id == id {
			return g
		}
	}
	return nil
}

// after returns the segment after id, or nil; s.mu held.
func (s *Store) after(id uint64) *segment {
	for _, g := range s.segs {
		if g.id > id {
			return g
		}
	}
	return nil
}

// Done reports the record id (from Next) delivered. Records may be
// reported in any order; the queue forgets them in order.
func (s *Store) Done(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := id - s.head
	if s.closed || id < s.head || i >= uint64(len(s.flights)) || s.flights[i].done {
		return
	}
	s.flights[i].done = true
	s.nDelivered.Add(uint64(s.flights[i].events))
	s.advance()
}

// advance forgets the delivered records at the head, removes the
// segments wholly delivered and, now and then, writes the cursor; s.mu
// held.
func (s *Store) advance() {
	n := 0
	for n < len(s.flights) && s.flights[n].done {
		n++
	}
	if n == 0 {
		return
	}
	last := s.flights[n-1]
	s.delSeg, s.delOff = last.seg, uint64(last.end)
	s.flights = s.flights[n:]
	s.head += uint64(n)
	if cap(s.flights) > 1024 && len(s.flights) < cap(s.flights)/4 {
		s.flights = slices.Clone(s.flights)
	}
	removed := false
	for len(s.segs) > 1 {
		g := s.segs[0]
		if g.id > s.delSeg || g.id == s.delSeg && (!g.sealed || int64(s.delOff) < g.size) || g.id == s.rid {
			break
		}
		s.writeCursor()
		s.recycle(g.id)
		s.used -= g.size
		s.segs = s.segs[1:]
		removed = true
	}
	if removed {
		s.full = false
		signal(s.freed)
	} else if time.Since(s.cursorAt) >= cursorEvery {
		s.writeCursor()
	}
}

// recycle keeps the file of delivered segment id as a spare, or removes
// it; s.mu held.
func (s *Store) recycle(id uint64) {
	if reuseFiles && len(s.spares) < maxSpares {
		spare := filepath.Join(s.opts.Dir, fmt.Sprintf("%016x%s", id, spareSuffix))
		if os.Rename(s.path(id), spare) == nil {
			s.spares = append(s.spares, spare)
			return
		}
	}
	_ = os.Remove(s.path(id))
}

// dropSpares removes the spare files.
func (s *Store) dropSpares() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.spares {
		_ = os.Remove(p)
	}
	s.spares = nil
}

// writeCursor writes the delivered position to the cursor file (one
// write of 24 bytes; a torn one fails its checksum: a replay from the
// oldest segment, duplicates but no loss); s.mu held.
func (s *Store) writeCursor() {
	var b [cursorSize]byte
	binary.LittleEndian.PutUint64(b[:], s.delSeg)
	binary.LittleEndian.PutUint64(b[8:], s.delOff)
	binary.LittleEndian.PutUint64(b[16:], xxh3.Hash(b[:16]))
	_, _ = s.cursor.WriteAt(b[:], 0)
	s.cursorAt = time.Now()
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	st := Stats{Bytes: s.used, MaxBytes: s.opts.MaxBytes, Segments: len(s.segs), Full: s.full}
	s.mu.Unlock()
	st.Written, st.Synced, st.Read, st.Delivered, st.Syncs = s.nWritten.Load(), s.nSynced.Load(), s.nRead.Load(), s.nDelivered.Load(), s.nSyncs.Load()
	st.Damaged, st.DamagedBytes, st.DamagedEvents, st.Torn = s.nDamaged.Load(), s.nDamagedBytes.Load(), s.nDamagedEv.Load(), s.nTorn.Load()
	return st
}

// Close writes the cursor and closes the files (without a Sync: call
// it first for durability), releasing the directory's lock. Records
// reported delivered after it are not written down.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.writeCursor()
	size := s.wseg().size
	s.mu.Unlock()
	if s.wf != nil {
		_ = s.wf.Truncate(size) // a reused file's old end
	}
	return s.closeFiles()
}

func (s *Store) closeFiles() error {
	var errs []error
	for _, f := range append(s.unsynced, s.wf, s.rf, s.cursor) {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	if s.unlock != nil {
		s.unlock()
	}
	s.unsynced, s.wf, s.rf, s.cursor, s.unlock = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}
