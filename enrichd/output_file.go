package enrichd

import (
	"errors"
	"fmt"
	"os"
)

func init() {
	RegisterOutput(OutputKind{Type: "file", Endpoint: EndpointPath, New: func(oc *OutputConfig, env *Env) (Output, error) {
		st := env.OutputStats()
		f, err := newFileSink(oc.Path, oc.BufferSize, st)
		if err != nil {
			return nil, err
		}
		return newStreamOutput(f, st, env.Log), nil
	}})
}

// newFileSink opens path for appending, with a buffer of size bytes.
func newFileSink(path string, size int, st *OutputStats) (*fileSink, error) {
	s := &fileSink{path: path, w: newLineBuf(size), st: st}
	s.send = s.writeFile
	return s, s.open()
}

// preallocStep is how much disk a file output reserves past its end at a
// time.
const preallocStep = 16 << 20

// fileSink appends to a file, reopened on SIGHUP so that log rotation
// (rename, then HUP) starts a new file.
//
// The file never keeps a torn line: when a write stops inside a line (the
// disk is full), the sink cuts the file back to the end of the last whole
// line (ftruncate) before anything else is written, and keeps that line
// and the rest to write again. So each line is in the file once, whole,
// whatever writes failed on the way.
//
// Where the file system allows, it reserves disk past the end of the file
// ahead of its writes, preallocStep at a time, without changing the file's
// size; closing or reopening gives back what was not used. After a crash,
// at most preallocStep of reserved blocks stay with the file (the file's
// content and size are not affected) until it is truncated or removed.
type fileSink struct {
	path string
	f    *os.File
	w    lineBuf
	send sendFunc
	st   *OutputStats
	// torn is how many bytes of a torn last line the file holds: cut
	// before the next write.
	torn int64
	// ahead is how much of the reservation past the end is left; noAlloc
	// is set where reserving is not supported, reserved once it was done.
	ahead             int64
	noAlloc, reserved bool
}

func (s *fileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.f = f
	s.ahead, s.reserved = 0, false
	return nil
}

func (s *fileSink) Write(p []byte, _ int) error { return s.w.write(p, s.send) }

// writeFile appends p to the file. On an error, a torn last line is cut
// off (now, or before the next write if that fails too) and the bytes of
// p's whole lines written are returned.
func (s *fileSink) writeFile(p []byte) (int, error) {
	if err := s.cut(); err != nil {
		return 0, err
	}
	if !s.noAlloc && int64(len(p)) > s.ahead {
		s.reserve(int64(len(p)))
	}
	n, err := s.f.Write(p)
	if err == nil {
		s.ahead -= int64(n)
		s.st.Bytes.Add(uint64(n))
		return n, nil
	}
	whole := wholeLines(p, n)
	s.ahead = max(0, s.ahead-int64(n))
	s.st.Bytes.Add(uint64(whole))
	s.torn = int64(n - whole)
	_ = s.cut() // if it fails, the next write tries again first
	return whole, err
}

// cut truncates a torn last line off the end of the file. The file is
// opened for appending and the sink is its only writer: the torn bytes
// are the last ones.
func (s *fileSink) cut() error {
	if s.torn == 0 {
		return nil
	}
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("cutting a torn line off %s: %w", s.path, err)
	}
	if err := s.f.Truncate(max(0, fi.Size()-s.torn)); err != nil {
		return fmt.Errorf("cutting a torn line off %s: %w", s.path, err)
	}
	// Truncating gave back the reservation past the end too.
	s.torn, s.ahead, s.reserved = 0, 0, false
	return nil
}

// reserve reserves at least n bytes past the end of the file (as the
// file's size says: someone may have truncated it).
func (s *fileSink) reserve(n int64) {
	fi, err := s.f.Stat()
	if err != nil {
		return
	}
	if !fi.Mode().IsRegular() {
		s.noAlloc = true // a device or a pipe: nothing to reserve
		return
	}
	n = max(n, preallocStep)
	switch err := preallocate(s.f, fi.Size(), n); {
	case errors.Is(err, errors.ErrUnsupported):
		s.noAlloc = true
	case err != nil:
		// Out of space, most likely: the write will say so. Try again
		// after as many bytes as a reservation would have held.
		s.ahead = n
	default:
		s.ahead, s.reserved = n, true
	}
}

// release gives back f's reservation past its end, if it has one:
// truncating to the current size frees the blocks beyond it. (The output is
// the file's only writer.)
func release(f *os.File, reserved bool) error {
	if !reserved {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return f.Truncate(fi.Size())
}

// Flush writes what the buffer holds, and what earlier writes could not.
func (s *fileSink) Flush() error {
	if err := s.w.flush(s.send); err != nil {
		return err
	}
	return s.cut()
}

// Reopen starts a new file at the path. What the old file could not take
// is written to the new one.
func (s *fileSink) Reopen() error {
	_ = s.Flush() // if it fails, the rest goes to the new file
	old, reserved, torn := s.f, s.reserved, s.torn
	if err := s.open(); err != nil {
		return err // keep writing to the old file
	}
	s.torn = 0
	if torn > 0 {
		// A last try to cut the old file's torn line.
		if fi, err := old.Stat(); err == nil {
			_ = old.Truncate(max(0, fi.Size()-torn))
		}
	}
	// The new file is in use: failing to give back the old one's
	// reservation (at most preallocStep) is no reopen failure.
	_ = release(old, reserved)
	return old.Close()
}

func (s *fileSink) Close() error {
	return errors.Join(s.Flush(), release(s.f, s.reserved), s.f.Close())
}
