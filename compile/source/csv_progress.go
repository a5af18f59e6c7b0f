package source

import (
	"io"
	"os"
)

// Progress reports how far through its input file the reader is: the
// offset in the file (of the compressed bytes, for a .gz file) and the
// file's size. Both are 0 when the input is not a regular file (a pipe
// on standard input), whose size is not known.
func (r *csvReader) Progress() (done, total int64) {
	f := r.inputFile()
	if f == nil {
		return 0, 0
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, 0
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, 0
	}
	return min(off, fi.Size()), fi.Size()
}

// inputFile is the file the reader reads, or nil.
func (r *csvReader) inputFile() *os.File {
	if r.name == StdinName {
		return os.Stdin
	}
	for _, c := range r.closers {
		if f, ok := c.(*os.File); ok {
			return f
		}
	}
	return nil
}
