//go:build !unix

package queue

import "os"

// reuseFiles says whether delivered segment files are written again: not
// here, where writeRecord writes no end mark (a reused file's old end
// would read as a record cut short).
const reuseFiles = false

// writeRecord writes a record's header and payload at off.
func writeRecord(f *os.File, h, p []byte, off int64) error {
	if _, err := f.WriteAt(h, off); err != nil {
		return err
	}
	_, err := f.WriteAt(p, off+int64(len(h)))
	return err
}
