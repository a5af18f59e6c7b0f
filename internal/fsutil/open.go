package fsutil

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
)

// ErrNotRegular is what a NotRegularError is: errors.Is(err,
// ErrNotRegular) tells a file refused for its type.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is the error of OpenRegular and ReadRegular for a path
// that is not a regular file: a directory, a named pipe (FIFO), a device
// or a socket.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the file's type bits
}

func (e *NotRegularError) Error() string { return e.Path + ": " + e.Reason() }

// Reason is the error without the path: "not a regular file (a named
// pipe)".
func (e *NotRegularError) Reason() string {
	return "not a regular file (" + DescribeMode(e.Mode) + ")"
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// DescribeMode names the type of a file that is not a regular file.
func DescribeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.String()
}

// OpenRegular opens the file at path (following symbolic links) for
// reading if it is a regular file, and returns it with its FileInfo.
// Anything else is refused at once with a *NotRegularError, before a read:
// opening a named pipe with os.Open waits for a writer that may never
// come, and a device's contents are no table or manifest. Every reader of
// tables and manifests opens them this way.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNoBlock(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return f, fi, nil
}

// ReadRegular is os.ReadFile for a regular file only: anything else is
// refused at once with a *NotRegularError (see OpenRegular).
func ReadRegular(path string) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if n := fi.Size(); n > 0 && int64(int(n+1)) == n+1 {
		buf.Grow(int(n + 1)) // the +1 reads the EOF without growing
	}
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
