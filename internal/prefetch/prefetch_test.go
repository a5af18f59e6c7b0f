package prefetch

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestLines: prefetching never faults, whatever the addresses (nil, the
// top of the address space, unmapped), and changes no memory; a Batch
// prefetches whenever it is full.
func TestLines(t *testing.T) {
	buf := make([]byte, 1<<16)
	for i := range buf {
		buf[i] = byte(i)
	}
	addrs := []uintptr{0, 1, ^uintptr(0), ^uintptr(0) &^ 4095, ^uintptr(0) >> 16, uintptr(unsafe.Pointer(&buf[0]))}
	for i := range 64 {
		addrs = append(addrs, uintptr(unsafe.Pointer(&buf[i*1024])))
	}
	Lines(addrs)
	Lines(nil)
	Lines(addrs[:1])
	var b Batch
	for range 3 { // more than a Batch holds
		for _, a := range addrs {
			b.Add(a)
		}
	}
	if b.n != 3*len(addrs)%len(b.addrs) {
		t.Fatalf("Batch holds %d addresses after %d were added", b.n, 3*len(addrs))
	}
	b.Flush()
	if b.n != 0 {
		t.Fatal("Flush left addresses")
	}
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}

// BenchmarkRandomReads reads bytes at random offsets of a large buffer in
// stages of 64: with plain loads only, and with the stage prefetched first.
func BenchmarkRandomReads(b *testing.B) {
	mem := make([]byte, 1<<30)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	rng := rand.New(rand.NewPCG(1, 2))
	offs := make([]int, 1<<20)
	for i := range offs {
		offs[i] = rng.IntN(len(mem))
	}
	const stage = 64
	for _, pf := range []bool{false, true} {
		name := "loads"
		if pf {
			name = "prefetched"
		}
		b.Run(name, func(b *testing.B) {
			var sink byte
			var addrs [stage]uintptr
			j := 0
			for b.Loop() {
				os := offs[j : j+stage]
				if pf {
					for i, o := range os {
						addrs[i] = uintptr(unsafe.Pointer(&mem[o]))
					}
					Lines(addrs[:])
				}
				for _, o := range os {
					sink ^= mem[o]
				}
				j = (j + stage) & (len(offs) - 1)
			}
			_ = sink
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*stage), "ns/read")
		})
	}
}
