package compile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// A large table's entries do not stay in memory: once a compile has read
// spillRows rows, it writes every entry to one of spillParts files by the
// top bits of its hash (the partition of the table's bucketed index), so
// that each partition can be sorted, deduplicated and placed in its
// buckets on its own, in memory bounded by the largest partition.
const (
	spillBits  = 8
	spillParts = 1 << spillBits
	entrySize  = 24 // hash, offset, at: little-endian uint64s
)

// spillRows is the number of rows above which a table gets a bucketed
// index; a variable so that tests can partition small tables.
var spillRows = 1 << 22

// spiller holds the entries of a large table in spillParts files.
type spiller struct {
	dir     string
	untrack func() // stops fsutil.RemoveTemps from removing dir
	files   [spillParts]*os.File
	w       [spillParts]*bufio.Writer
	counts  [spillParts]int64
	buf     [entrySize]byte
}

// newSpiller creates the spill files in a new directory under dir.
func newSpiller(dir string) (s *spiller, err error) {
	s = &spiller{}
	if s.dir, err = os.MkdirTemp(dir, ".lut-spill-"); err != nil {
		return nil, fmt.Errorf("creating the directory of the partitions: %w", err)
	}
	// A compile ended by a signal removes the partitions as it removes
	// the table's temporary file.
	s.untrack = fsutil.TrackTemp(s.dir)
	for i := range s.files {
		f, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("part-%03d", i)))
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("creating a partition file: %w", err)
		}
		s.files[i] = f
		s.w[i] = bufio.NewWriterSize(f, 32<<10)
	}
	return s, nil
}

// spillDir returns the directory of a spill next to f, the table being
// written (its own directory has room for the table, and so for its
// entries), or the temporary directory when f has no name.
func spillDir(f *os.File) string {
	if f.Name() == "" {
		return os.TempDir()
	}
	return filepath.Dir(f.Name())
}

func (s *spiller) add(e entry) error {
	le := binary.LittleEndian
	le.PutUint64(s.buf[0:], e.hash)
	le.PutUint64(s.buf[8:], e.off)
	le.PutUint64(s.buf[16:], uint64(e.at))
	i := e.hash >> (64 - spillBits)
	s.counts[i]++
	_, err := s.w[i].Write(s.buf[:])
	return err
}

// finish flushes the spill files; read may be called afterwards, from
// several goroutines.
func (s *spiller) finish() error {
	for i, w := range s.w {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("writing partition %d: %w", i, err)
		}
		s.w[i] = nil
	}
	return nil
}

// read returns the entries of partition i, appended to dst[:0].
func (s *spiller) read(i int, dst []entry) ([]entry, error) {
	n := s.counts[i]
	buf := make([]byte, entrySize*n)
	if _, err := s.files[i].ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading partition %d: %w", i, err)
	}
	dst = dst[:0]
	le := binary.LittleEndian
	for b := buf; len(b) >= entrySize; b = b[entrySize:] {
		dst = append(dst, entry{hash: le.Uint64(b), off: le.Uint64(b[8:]), at: int64(le.Uint64(b[16:]))})
	}
	return dst, nil
}

// remove closes and deletes the spill files.
func (s *spiller) remove() {
	for _, f := range s.files {
		if f != nil {
			_ = f.Close()
		}
	}
	_ = os.RemoveAll(s.dir)
	s.untrack()
}
