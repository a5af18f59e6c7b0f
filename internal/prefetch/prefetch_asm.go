//go:build amd64 || arm64

package prefetch

// lines prefetches the n addresses from p on; n > 0.
//
//go:noescape
func lines(p *uintptr, n int)
