package tablebuild

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// A source file rewritten in place while a table is built from it (a
// cron job writing it again, cp over it) is read part old, part new, or
// cut short where the writer had got to: a table missing rows. Its
// digest, taken before the compile, may still match the file once the
// writer is done, and the next build would keep that table as unchanged.
// So each source file is opened and stamped before its digest, stamped
// again through that open file after the compile, and a table whose
// sources' stamps differ fails. A file renamed over the source meanwhile
// changes nothing of the one held open: the compile read one whole file,
// and a digest of the other one only makes the next build rebuild it.

// sourceStamp is what tells that an open file was written: its size,
// modification time and (where the system keeps one) change time, which
// a write moves even when the writer restores the modification time, and
// count of links, which tells a change time moved by a rename over it.
type sourceStamp struct {
	f     *os.File
	size  int64
	mtime time.Time
	ctime time.Time
	links uint64
}

func (s *sourceStamp) stat() (sourceStamp, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return sourceStamp{}, err
	}
	ctime, links := changeTime(fi)
	return sourceStamp{f: s.f, size: fi.Size(), mtime: fi.ModTime(), ctime: ctime, links: links}, nil
}

func stampSource(path string) (sourceStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return sourceStamp{}, err
	}
	st, err := (&sourceStamp{f: f}).stat()
	if err != nil {
		f.Close()
	}
	return st, err
}

// closeStamps closes the files stamps hold.
func closeStamps(stamps []sourceStamp) {
	for _, s := range stamps {
		if s.f != nil {
			s.f.Close()
		}
	}
}

// stamped reports whether s is a file its reader may read part old, part
// new: not a database, nor a SQLite file, whose reader reads one snapshot
// of it while other programs write it.
func stamped(s *SourceConfig) bool {
	return !s.IsDatabase() && (s.LUT == nil || source.FormatOf(s.Resolved, *s.LUT) != "sqlite")
}

// stampSources opens and stamps t's source files (see stamped); the
// caller closes them (closeStamps).
func stampSources(t *TableConfig) ([]sourceStamp, error) {
	st := make([]sourceStamp, len(t.Sources))
	for i := range t.Sources {
		s := &t.Sources[i]
		if !stamped(s) {
			continue
		}
		var err error
		if st[i], err = stampSource(s.Resolved); err != nil {
			closeStamps(st)
			return nil, fmt.Errorf("source %s: %w", s.Resolved, fsutil.UnwrapPath(err))
		}
	}
	return st, nil
}

// errSourceChanged is the error of a table whose source was written
// while it was read.
var errSourceChanged = errors.New("the file changed while the table was built from it (written in place?); the table was not built: run the build again once the file is complete, and have its writer write a new file and rename it into place")

// checkSources returns an error naming the first source file of t whose
// stamp, through the file held open, differs from its stamp in before.
func checkSources(t *TableConfig, before []sourceStamp) error {
	for i := range t.Sources {
		s := &t.Sources[i]
		if !stamped(s) {
			continue
		}
		b := before[i]
		now, err := b.stat()
		// A change of links (renamed over) moves the change time too.
		written := !b.ctime.Equal(now.ctime) && b.links == now.links
		if err != nil || b.size != now.size || !b.mtime.Equal(now.mtime) || written {
			return fmt.Errorf("source %s: %w", s.Resolved, errSourceChanged)
		}
	}
	return nil
}
