//go:build !unix

package queue

import "os"

// writeRecord writes a record's header and payload at off.
func writeRecord(f *os.File, h, p []byte, off int64) error {
	if _, err := f.WriteAt(h, off); err != nil {
		return err
	}
	_, err := f.WriteAt(p, off+int64(len(h)))
	return err
}
