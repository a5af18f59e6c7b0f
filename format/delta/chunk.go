package delta

// Content-defined chunking with a gear hash (as in FastCDC): a chunk ends
// where the hash of the last 64 bytes has its top chunkBits bits zero,
// at least chunkMin and at most chunkMax bytes after its start. Equal
// content gives equal boundaries wherever it sits in the file, so a row
// that grows or shrinks shifts the bytes after it without changing their
// chunks.
const (
	chunkMin  = 1 << 10
	chunkMax  = 1 << 16
	chunkBits = 12 // about 4 KiB between boundaries after chunkMin
	chunkMask = uint64(1<<chunkBits-1) << (64 - chunkBits)
)

// gear holds 256 pseudo-random words (splitmix64 from a fixed seed): the
// boundaries, and so the deltas, are the same on every run.
var gear = func() (g [256]uint64) {
	x := uint64(0x6c75746b69746364)
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g[i] = z ^ z>>31
	}
	return g
}()

// nextChunk returns the length of the chunk that starts at b[0].
func nextChunk(b []byte) int {
	if len(b) <= chunkMin {
		return len(b)
	}
	end := min(len(b), chunkMax)
	var h uint64
	for i := chunkMin - 64; i < end; i++ {
		h = h<<1 + gear[b[i]]
		if i >= chunkMin && h&chunkMask == 0 {
			return i + 1
		}
	}
	return end
}
