package jsonstr

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// needsEscapeLongs are the ways needsEscapeLong checks n bytes on this
// CPU.
func needsEscapeLongs(n int) []struct {
	name string
	fn   func(*byte, int) bool
} {
	fs := []struct {
		name string
		fn   func(*byte, int) bool
	}{{"needsEscapeLong", needsEscapeLong}, {"SSE2", needsEscapeSSE2}}
	if n >= 32 && hasAVX2 {
		fs = append(fs, struct {
			name string
			fn   func(*byte, int) bool
		}{"AVX2", needsEscapeAVX2})
	}
	return fs
}

// TestAVX2OnlyVEX checks that needsEscapeAVX2 uses only VEX-encoded
// instructions on vector registers. A legacy SSE instruction (MOVQ AX,
// X4) between 256-bit ones makes some Intel CPUs save and restore the
// registers' upper halves at each switch: on a Xeon guest that made
// AppendString of an 80-byte string take 450 ns instead of 19.
func TestAVX2OnlyVEX(t *testing.T) {
	src, err := os.ReadFile("escape_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	vec := regexp.MustCompile(`\b[XY]\d+\b`)
	in, checked := false, 0
	for i, line := range strings.Split(string(src), "\n") {
		code, _, _ := strings.Cut(line, "//")
		code = strings.TrimSpace(code)
		if strings.HasPrefix(code, "TEXT ") {
			in = strings.HasPrefix(code, "TEXT ·needsEscapeAVX2(")
			continue
		}
		if !in || !vec.MatchString(code) {
			continue
		}
		checked++
		if op, _, _ := strings.Cut(code, " "); !strings.HasPrefix(op, "V") {
			t.Errorf("escape_amd64.s:%d: %s is not VEX-encoded: %q", i+1, op, code)
		}
	}
	if checked < 10 {
		t.Fatalf("found %d vector instructions in needsEscapeAVX2; has it moved?", checked)
	}
}
