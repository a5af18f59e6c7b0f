package queue

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/internal/corrupt"
)

// cutTail cuts segment id, the last one an earlier run wrote, after its
// last whole record, so that no later start finds its end again. What
// follows that record is a record cut short by a crash (reported and
// counted as torn, once, here) unless it begins with the end mark: then
// it is what a reused file held before, dropped without a word, or, when
// it is zeros to the end of the file and longer than the mark, records
// whose bytes a crash of the system lost (reported and counted as torn,
// Zeros). A record whose header checks but whose payload does not,
// followed by the mark, was written whole and damaged since: it is kept,
// for Next to report. It returns the segment's size.
func (s *Store) cutTail(id uint64) (int64, error) {
	path := s.path(id)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size < segHeaderSize {
		// Cut short as it was created: an empty segment.
		var h [segHeaderSize]byte
		putSegHeader(h[:], id)
		if _, err := f.WriteAt(h[:], 0); err != nil {
			return 0, err
		}
		return segHeaderSize, nil
	}
	end, err := lastRecordEnd(f, size, id)
	if err != nil {
		return 0, fmt.Errorf("queue: %s: %w", path, err)
	}
	if end == size {
		return size, nil
	}
	var h [recHeaderSize]byte
	n, err := f.ReadAt(h[:min(recHeaderSize, size-end)], end)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("queue: %s: %w", path, err)
	}
	if !markAt(h[:n]) {
		d := Damage{Off: end, Len: size - end, Torn: true}
		if rh, ok := parseRecHeader(h[:n], id); ok {
			d.Events = int(rh.events)
		}
		d.Err = corrupt.At("queue record", end, "record torn at the end of the segment (%d bytes)", d.Len)
		s.damaged(id, d)
	} else if size-end > recHeaderSize {
		zeros, err := zerosFrom(f, end+recHeaderSize, size)
		if err != nil {
			return 0, fmt.Errorf("queue: %s: %w", path, err)
		}
		if zeros {
			d := Damage{Off: end, Len: size - end, Torn: true, Zeros: true}
			d.Err = corrupt.At("queue record", end, "%d zero bytes to the end of the segment where records were written (not on the disk at a crash of the system)", d.Len)
			s.damaged(id, d)
		}
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("queue: %s: cutting the end after offset %d: %w", path, end, err)
	}
	return end, nil
}

// lastRecordEnd returns the offset after the last whole record of
// segment id, f of size bytes: the last that checks, or one damaged
// since it was written (followed by the end mark or the end of the
// file).
func lastRecordEnd(f *os.File, size int64, id uint64) (int64, error) {
	var h [recHeaderSize]byte
	var p []byte
	off := int64(segHeaderSize)
	for size-off >= recHeaderSize {
		if _, err := f.ReadAt(h[:], off); err != nil {
			return 0, err
		}
		rh, ok := parseRecHeader(h[:], id)
		end := off + recHeaderSize + int64(rh.length)
		if !ok || end > size {
			break
		}
		p = slices.Grow(p[:0], int(rh.length))[:rh.length]
		if _, err := f.ReadAt(p, off+recHeaderSize); err != nil {
			return 0, err
		}
		if xxh3.Hash(p) != rh.sum {
			if ok, err := markIn(f, end, size); err != nil || !ok {
				break
			}
		}
		off = end
	}
	if ok, err := markIn(f, off, size); err != nil || ok {
		return off, err
	}
	// Neither a record nor the mark: damage before more records, or the
	// end cut short. Look for the records after it.
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	last := 0
	Scan(b, off, id, func(e Entry) { last = int(e.Off-off) + recHeaderSize + len(e.Payload) }, func(Damage) {})
	for {
		rh, ok := parseRecHeader(b[last:], id)
		end := last + recHeaderSize + int(rh.length)
		if !ok || end > len(b) || !markAt(b[end:min(end+recHeaderSize, len(b))]) {
			return off + int64(last), nil
		}
		last = end
	}
}

// zerosFrom says whether f, of size bytes, holds only zeros from off to
// its end.
func zerosFrom(f *os.File, off, size int64) (bool, error) {
	b := make([]byte, min(size-off, 64<<10))
	for off < size {
		n, err := f.ReadAt(b[:min(int64(len(b)), size-off)], off)
		if !markAt(b[:n]) {
			return false, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		if n == 0 {
			break
		}
		off += int64(n)
	}
	return true, nil
}

// markIn says whether f, of size bytes, has the end mark at off, or ends
// there.
func markIn(f *os.File, off, size int64) (bool, error) {
	var b [recHeaderSize]byte
	n, err := f.ReadAt(b[:min(recHeaderSize, size-off)], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return markAt(b[:n]), nil
}

// markAt says whether b, the bytes from an offset to at most
// recHeaderSize further, are the end mark (or as much of it as the file
// holds; none at its end).
func markAt(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
