package jsonstr

import "golang.org/x/sys/cpu"

// hasAVX2 says whether needsEscapeLong may use AVX2.
var hasAVX2 = cpu.X86.HasAVX2

// needsEscapeLong is NeedsEscape for n >= 16 bytes from p: 32 at a time
// in AVX2 registers when the CPU has them and n >= 32, else 16 at a time
// in SSE2 registers.
func needsEscapeLong(p *byte, n int) bool {
	if n >= 32 && hasAVX2 {
		return needsEscapeAVX2(p, n)
	}
	return needsEscapeSSE2(p, n)
}

// needsEscapeSSE2 is needsEscapeLong 16 bytes at a time, for n >= 16.
//
//go:noescape
func needsEscapeSSE2(p *byte, n int) bool

// needsEscapeAVX2 is needsEscapeLong 32 bytes at a time, for n >= 32.
//
//go:noescape
func needsEscapeAVX2(p *byte, n int) bool
