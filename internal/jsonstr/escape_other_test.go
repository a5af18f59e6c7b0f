//go:build !amd64

package jsonstr

// needsEscapeLongs are the ways needsEscapeLong checks n bytes.
func needsEscapeLongs(int) []struct {
	name string
	fn   func(*byte, int) bool
} {
	return []struct {
		name string
		fn   func(*byte, int) bool
	}{{"needsEscapeLong", needsEscapeLong}}
}
