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
// So each source file is stamped before its digest and again after the
// compile, and a table whose sources' stamps differ fails.

// sourceStamp is what tells that a file was written: its identity, size,
// modification time and (where the system keeps one) change time, which
// a write moves even when the writer restores the modification time.
type sourceStamp struct {
	fi    os.FileInfo
	size  int64
	mtime time.Time
	ctime time.Time
}

func stampSource(path string) (sourceStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return sourceStamp{}, err
	}
	return sourceStamp{fi: fi, size: fi.Size(), mtime: fi.ModTime(), ctime: changeTime(fi)}, nil
}

// stamped reports whether s is a file its reader may read part old, part
// new: not a database, nor a SQLite file, whose reader reads one snapshot
// of it while other programs write it.
func stamped(s *SourceConfig) bool {
	return !s.IsDatabase() && (s.LUT == nil || source.FormatOf(s.Resolved, *s.LUT) != "sqlite")
}

// stampSources stamps t's source files (see stamped).
func stampSources(t *TableConfig) ([]sourceStamp, error) {
	st := make([]sourceStamp, len(t.Sources))
	for i := range t.Sources {
		s := &t.Sources[i]
		if !stamped(s) {
			continue
		}
		var err error
		if st[i], err = stampSource(s.Resolved); err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Resolved, fsutil.UnwrapPath(err))
		}
	}
	return st, nil
}

// errSourceChanged is the error of a table whose source was written
// while it was read.
var errSourceChanged = errors.New("the file changed while the table was built from it (written in place?); the table was not built: run the build again once the file is complete, and have its writer write a new file and rename it into place")

// checkSources returns an error naming the first source file of t whose
// stamp differs from its stamp in before.
func checkSources(t *TableConfig, before []sourceStamp) error {
	for i := range t.Sources {
		s := &t.Sources[i]
		if !stamped(s) {
			continue
		}
		now, err := stampSource(s.Resolved)
		b := before[i]
		if err != nil || !os.SameFile(b.fi, now.fi) || b.size != now.size || !b.mtime.Equal(now.mtime) || !b.ctime.Equal(now.ctime) {
			return fmt.Errorf("source %s: %w", s.Resolved, errSourceChanged)
		}
	}
	return nil
}
