package document

import (
	"bufio"
	"bytes"
)

// utf8BOM is the byte order mark some editors write at the start of a
// UTF-8 file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// skipBOM drops a byte order mark at the start of br, as the CSV reader
// does. Columns are counted after it, as the CSV reader counts them: the
// character after the mark is at column 1 of line 1. An error reading the
// start of the file is left to the first read, which returns it.
func skipBOM(br *bufio.Reader) {
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
}
