package jsonstr

import "golang.org/x/sys/cpu"

// hasAVX2 says whether needsEscapeLong (in assembly) may use AVX2.
var hasAVX2 = cpu.X86.HasAVX2

// needsEscapeLong is NeedsEscape for n >= 16 bytes from p: 32 at a time
// in AVX2 registers when the CPU has them and n >= 32, else 16 at a time
// in SSE2 registers.
//
//go:noescape
func needsEscapeLong(p *byte, n int) bool

// needsEscapeSSE2 is needsEscapeLong 16 bytes at a time, for n >= 16.
//
//go:noescape
func needsEscapeSSE2(p *byte, n int) bool

// needsEscapeAVX2 is needsEscapeLong 32 bytes at a time, for n >= 32.
//
//go:noescape
func needsEscapeAVX2(p *byte, n int) bool
