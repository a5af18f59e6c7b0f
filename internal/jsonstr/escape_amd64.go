package jsonstr

// needsEscapeLong is NeedsEscape for n >= 16 bytes from p, 16 at a time
// in SSE2 registers.
//
//go:noescape
func needsEscapeLong(p *byte, n int) bool
