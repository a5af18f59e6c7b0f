//go:build !amd64

package jsonstr

import "unsafe"

// needsEscapeLong is NeedsEscape for n >= 16 bytes from p.
func needsEscapeLong(p *byte, n int) bool {
	return needsEscapeWords(unsafe.Slice(p, n))
}
