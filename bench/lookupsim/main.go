// Command lookupsim runs the lookups of reader's BenchmarkGet under a cache
// simulator, so that instructions and cache misses per lookup can be
// counted on machines without hardware performance counters (see
// README.md). It looks up the same keys as the benchmark's two key sets in
// the benchmark's 2M-row table (Get, Lookup) or in a Go map of the same
// rows, and brackets each measured pass with callgrind client requests.
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"

	"github.com/lutkit/lutkit/reader"
)

// The rows of reader's genSource (reader/reader_test.go), regenerated
// here to fill the Go map: the same seeds, lengths and letters.
const (
	rows    = 2_000_000
	letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,\""
	email   = 9 // the Email column, whose length every pass reads
)

var lens = []int{15, 6, 7, 18, 11, 20, 14, 17, 24, 10, 20}

func genRows(n int, fn func(key string, vals []string)) {
	rng := rand.New(rand.NewPCG(42, 99))
	var buf []byte
	for i := 1; i <= n; i++ {
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		ends := []int{len(buf)}
		for _, l := range lens {
			l += rng.IntN(6)
			for range l {
				buf = append(buf, letters[rng.IntN(len(letters))])
			}
			ends = append(ends, len(buf))
		}
		vals := make([]string, len(ends))
		start := 0
		for c, e := range ends {
			vals[c] = string(buf[start:e])
			start = e
		}
		fn(vals[0], vals)
	}
}

func keys(seed uint64, n, count int) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed))
	ks := make([][]byte, count)
	for i := range ks {
		ks[i] = []byte(strconv.Itoa(1 + r.IntN(n)))
	}
	return ks
}

//go:noinline
func getPass(t *reader.Table, keys [][]byte) int {
	var row reader.Row
	sink := 0
	for _, k := range keys {
		if !t.Get(k, &row) {
			panic("key " + string(k) + " not found")
		}
		sink += len(row.Col(email))
	}
	return sink
}

//go:noinline
func lookupPass(t *reader.Table, keys [][]byte) int {
	sink := 0
	for _, k := range keys {
		v, ok := t.Lookup(k)
		if !ok {
			panic("key " + string(k) + " not found")
		}
		sink += len(v.Col(email))
	}
	return sink
}

//go:noinline
func batchPass(t *reader.Table, keys [][]byte) int {
	const batch = 256 // as BenchmarkGet's batch loop
	out := make([]reader.View, batch)
	sink := 0
	for len(keys) >= batch {
		if t.LookupBatch(keys[:batch], out) != batch {
			panic("a key of the batch not found")
		}
		for _, v := range out {
			sink += len(v.Col(email))
		}
		keys = keys[batch:]
	}
	return sink
}

// measure runs pass over warmup (unmeasured), then over keys between a
// reset and a dump of the counters: one dump per call.
//
//go:noinline
func measure(pass func([][]byte) int, warmup, keys [][]byte) int {
	sink := pass(warmup)
	zeroStats()
	sink += pass(keys)
	dumpStats()
	return sink
}

func mapPass(m map[string][]string, keys [][]byte) int {
	sink := 0
	for _, k := range keys {
		row, ok := m[string(k)]
		if !ok {
			panic("key " + string(k) + " not found")
		}
		sink += len(row[email])
	}
	return sink
}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "lut" && os.Args[1] != "map") {
		fmt.Fprintln(os.Stderr, "usage: lookupsim lut TABLE.lut | lookupsim map -")
		os.Exit(2)
	}
	// Keep the lookups on the main thread, whose costs callgrind's
	// --separate-threads=yes reports apart from the runtime's threads.
	runtime.LockOSThread()
	hot := keys(7, rows, 1<<16)       // the benchmark's hot set
	warm := keys(7, rows, 1<<18)      // uniform, for the warm-up pass
	uniform := keys(8, rows, 1<<18)   // uniform, measured: other rows
	uniform2 := keys(9, rows, 1<<18)  // uniform, measured for Lookup
	uniform3 := keys(10, rows, 1<<18) // uniform, measured for LookupBatch
	sink := 0
	// Instrumentation starts before each key set's warm-up pass; the
	// statistics are zeroed after it and dumped after the measured pass,
	// so that each dump (callgrind.out.N-01) holds one measured pass:
	// 1 hot, 2 uniform, and for lut also 3 Lookup hot, 4 Lookup uniform,
	// 5 LookupBatch hot, 6 LookupBatch uniform.
	switch os.Args[1] {
	case "lut":
		t, err := reader.Open(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		startInstrumentation()
		get := func(keys [][]byte) int { return getPass(t, keys) }
		lookup := func(keys [][]byte) int { return lookupPass(t, keys) }
		batch := func(keys [][]byte) int { return batchPass(t, keys) }
		// Dumps 1 to 6, in the order the README lists them. The uniform
		// Lookup and batch passes are warmed by the passes before them.
		sink += measure(get, hot, hot)
		sink += measure(get, warm, uniform)
		sink += measure(lookup, hot, hot)
		sink += measure(lookup, nil, uniform2)
		sink += measure(batch, hot, hot)
		sink += measure(batch, nil, uniform3)
	case "map":
		m := make(map[string][]string, rows)
		genRows(rows, func(k string, v []string) { m[k] = v })
		startInstrumentation()
		pass := func(keys [][]byte) int { return mapPass(m, keys) }
		sink += measure(pass, hot, hot)
		sink += measure(pass, warm, uniform)
	}
	fmt.Println(sink)
}
