//go:build !unix

package reader

import (
	"io"
	"os"
)

// mmapFile reads the whole file where mapping is not supported.
func mmapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, err
}

func munmap([]byte) error { return nil }

func willNeed([]byte) {}
