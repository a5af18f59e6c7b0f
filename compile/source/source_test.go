package source_test

import (
	"fmt"

	"github.com/lutkit/lutkit/compile/source"
)

// A row whose bytes are valid UTF-8 can still hold fields that are not:
// here the first byte of é ends one field and its last byte starts the
// next.
func ExampleValidFields() {
	for _, row := range [][]string{{"key", "é"}, {"key\xc3", "\xa9"}, {"", "é", ""}} {
		var buf []byte
		ends := make([]int, len(row))
		for i, f := range row {
			buf = append(buf, f...)
			ends[i] = len(buf)
		}
		fields := make([][]byte, len(row))
		source.SplitFields(fields, buf, ends)
		fmt.Printf("%q: %t\n", buf, source.ValidFields(buf, fields))
	}
	// Output:
	// "keyé": true
	// "keyé": false
	// "é": true
}
