package jsonstr

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
