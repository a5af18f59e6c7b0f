package enrichd

import (
	"bufio"
	"errors"
	"os"
)

func init() {
	RegisterOutput(OutputKind{Type: "file", Endpoint: EndpointPath, New: func(oc *OutputConfig, env *Env) (Output, error) {
		st := env.OutputStats()
		f := &fileSink{path: oc.Path, size: oc.BufferSize, st: st}
		if err := f.open(); err != nil {
			return nil, err
		}
		return newStreamOutput(f, st, env.Log), nil
	}})
}

// preallocStep is how much disk a file output reserves past its end at a
// time.
const preallocStep = 16 << 20

// fileSink appends to a file, reopened on SIGHUP so that log rotation
// (rename, then HUP) starts a new file.
//
// Where the file system allows, it reserves disk past the end of the file
// ahead of its writes, preallocStep at a time, without changing the file's
// size; closing or reopening gives back what was not used. After a crash,
// at most preallocStep of reserved blocks stay with the file (the file's
// content and size are not affected) until it is truncated or removed.
type fileSink struct {
	path string
	size int
	f    *os.File
	w    *bufio.Writer
	st   *OutputStats
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
	if s.w == nil {
		s.w = bufio.NewWriterSize(f, s.size)
	} else {
		s.w.Reset(f)
	}
	return nil
}

func (s *fileSink) Write(p []byte) error {
	if !s.noAlloc && int64(len(p)) > s.ahead {
		s.reserve(int64(len(p)))
	}
	err := writeThrough(s.w, s.f, p)
	if err != nil {
		s.st.Errors.Add(1)
		return err
	}
	s.ahead -= int64(len(p))
	s.st.Bytes.Add(uint64(len(p)))
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
	switch err := preallocate(s.f, fi.Size()+int64(s.w.Buffered()), n); {
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

func (s *fileSink) Flush() error {
	err := s.w.Flush()
	if err != nil {
		s.st.Errors.Add(1)
	}
	return err
}
func (s *fileSink) Reopen() error {
	s.Flush()
	old, reserved := s.f, s.reserved
	if err := s.open(); err != nil {
		s.st.Errors.Add(1)
		return err // keep writing to the old file
	}
	// The new file is in use: failing to give back the old one's
	// reservation (at most preallocStep) is no reopen failure.
	_ = release(old, reserved)
	return old.Close()
}
func (s *fileSink) Close() error {
	return errors.Join(s.w.Flush(), release(s.f, s.reserved), s.f.Close())
}
