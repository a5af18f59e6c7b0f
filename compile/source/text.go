package source

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// decompressed returns r read through a buffer of bufSize bytes, and
// decompressed when name ends in ".gz" or the data starts with the gzip
// magic bytes; zr is then the decompressor, which the caller closes.
// Errors name the file.
func decompressed(r io.Reader, name string, bufSize int) (src io.Reader, zr io.Closer, err error) {
	br := bufio.NewReaderSize(r, bufSize)
	magic, _ := br.Peek(2)
	gz := strings.HasSuffix(strings.ToLower(name), ".gz") || len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
	if !gz {
		return br, nil, nil
	}
	z, err := gzip.NewReader(br)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	return z, z, nil
}

// OpenText opens a text file for reading, decompressed as the CSV reader
// does (a name ending in .gz, or data starting with the gzip magic
// bytes). Closing it closes the file. Errors name the file.
func OpenText(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	src, zr, err := decompressed(f, path, 64<<10)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &textFile{Reader: src, f: f, zr: zr}, nil
}

type textFile struct {
	io.Reader
	f  *os.File
	zr io.Closer
}

func (t *textFile) Close() error {
	var err error
	if t.zr != nil {
		err = t.zr.Close()
	}
	if ferr := t.f.Close(); err == nil {
		err = ferr
	}
	return err
}
