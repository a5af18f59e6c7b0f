package tables

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countMappings counts the mappings of this process whose file is one of
// the given inodes (read from /proc/self/maps).
func countMappings(t testing.TB, inodes map[uint64]bool) int {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		ino, err := strconv.ParseUint(fs[4], 10, 64)
		if err == nil && inodes[ino] {
			n++
		}
	}
	return n
}

func inodeOf(t testing.TB, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestSwapUnderLoad replaces a 2M-row table 100 times (by atomic rename
// into a watched directory) while 4 goroutines look keys up continuously.
//
// Compiling 100 distinct 2M-row versions would take minutes, so the test
// compiles 4 versions (every value of version V carries "vV") once and
// publishes them in rotation: publish i installs version i%4+1 through a
// fresh hard link renamed over live/customers.lut, so every publish is a
// new file (a new directory entry and a changed inode at that name) and
// consecutive publishes always differ in version.
func TestSwapUnderLoad(t *testing.T) {
	rows, swaps := 2_000_000, 100
	if testing.Short() {
		rows, swaps = 100_000, 30
	}
	const nver = 4
	const poll = time.Second
	root := t.TempDir()
	verDir, live := filepath.Join(root, "versions"), filepath.Join(root, "live")
	must(t, os.Mkdir(verDir, 0o755))
	must(t, os.Mkdir(live, 0o755))
	inodes := map[uint64]bool{}
	var wg sync.WaitGroup
	start := time.Now()
	paths := make([]string, nver+1)
	for v := 1; v <= nver; v++ {
		paths[v] = filepath.Join(verDir, fmt.Sprintf("v%d.lut", v))
		wg.Add(1)
		go func() {
			defer wg.Done()
			compileVersionFast(t, paths[v], rows, v)
		}()
		if v%2 == 0 {
			wg.Wait() // two at a time: two cores
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for v := 1; v <= nver; v++ {
		inodes[inodeOf(t, paths[v])] = true
	}
	t.Logf("compiled %d versions of %d rows in %v", nver, rows, time.Since(start))

	install := func(i, v int) {
		tmp := filepath.Join(live, fmt.Sprintf(".customers.lut.tmp-%d", i))
		if err := os.Link(paths[v], tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(live, "customers.lut")); err != nil {
			t.Fatal(err)
		}
	}
	install(0, 1)
	if n := countMappings(t, inodes); n != 0 {
		t.Fatalf("%d mappings of the table files before Open", n)
	}
	log, logs := newTestLogger(t)
	set, err := Open(live, Options{PollInterval: poll, DataVerify: DataVerifyNone, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()

	// published is the index of the last publish the writer saw take
	// effect; a reader that reads it before acquiring a snapshot must see
	// that version or a later one, never an older one.
	var (
		published atomic.Int64
		stop      atomic.Bool
		lookups   atomic.Int64
		failures  atomic.Int64
		readers   sync.WaitGroup
		firstErr  atomic.Value
	)
	versionOf := func(i int64) int { return int(i%nver) + 1 }
	fail := func(err error) {
		if failures.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	h := set.Table("customers")
	// held[r] is the generation of the snapshot reader r holds: 0 when it
	// holds none, acquiring while it takes one (of a generation not known
	// yet). The mappings a moment later are at most those of the current
	// generation, of the ones held, and of a version being opened.
	const acquiring = ^uint64(0)
	held := make([]atomic.Uint64, max(4, runtime.GOMAXPROCS(0)))
	for r := range held {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			keys := make([]int, 8)
			for !stop.Load() {
				p := published.Load()
				held[r].Store(acquiring)
				snap := set.Acquire()
				held[r].Store(snap.Generation())
				// A batch of lookups in one snapshot: one version only.
				for i := range keys {
					keys[i] = rng.IntN(rows)
				}
				seen := 0
				for _, k := range keys {
					v, err := lookupVersion(snap, "customers", k)
					if err != nil {
						fail(err)
						break
					}
					if seen != 0 && v != seen {
						fail(fmt.Errorf("one snapshot gave versions %d and %d", seen, v))
					}
					seen = v
				}
				if tbl := h.LUT(snap); tbl == nil {
					fail(fmt.Errorf("handle does not resolve"))
				}
				snap.Release()
				held[r].Store(0)
				// The snapshot was taken between publish p and the one after
				// the last seen now (a reader can be descheduled across
				// several publishes).
				last := published.Load() + 1
				ok := seen == 0
				for j := p; j <= last && !ok; j++ {
					ok = seen == versionOf(j)
				}
				if !ok {
					fail(fmt.Errorf("between publishes %d (version %d) and %d a lookup saw version %d", p, versionOf(p), last, seen))
				}
				lookups.Add(int64(len(keys)))
			}
		}()
	}

	var lats []time.Duration
	for i := int64(1); i <= int64(swaps); i++ {
		v := versionOf(i)
		t0 := time.Now()
		install(int(i), v)
		// The new version must be visible within one poll interval.
		for {
			snap := set.Acquire()
			got, err := lookupVersion(snap, "customers", int(i)%rows)
			snap.Release()
			if err != nil {
				t.Fatal(err)
			}
			if got == v {
				break
			}
			if el := time.Since(t0); el > poll {
				t.Fatalf("publish %d: version %d not visible after %v (still %d)", i, v, el, got)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lats = append(lats, time.Since(t0))
		published.Store(i)
		// Let the readers run on this version a little.
		time.Sleep(2 * time.Millisecond)
		// The current version, the older ones readers still hold (a
		// reader can be descheduled holding one across several publishes)
		// and one being opened by a concurrent poll: nothing else stays
		// mapped.
		cur := set.Generation()
		olds := map[uint64]bool{}
		unknown := 0
		for r := range held {
			switch g := held[r].Load(); g {
			case 0, cur:
			case acquiring:
				unknown++
			default:
				olds[g] = true
			}
		}
		if n, bound := countMappings(t, inodes), 2+len(olds)+unknown; n > bound {
			t.Errorf("publish %d: %d mappings of table files; want at most %d: generation %d, %d older ones held (%v), %d being acquired, one being opened",
				i, n, bound, cur, len(olds), olds, unknown)
		}
	}
	stop.Store(true)
	readers.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d failed lookups; first: %v", n, firstErr.Load())
	}
	st := set.Stats()
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	t.Logf("%d swaps, %d lookups; visibility latency p50 %v, max %v; stats: gen %d swaps %d rejections %d notify %v",
		swaps, lookups.Load(), lats[len(lats)/2], lats[len(lats)-1], st.Generation, st.Swaps, st.Rejections, st.Notify)
	if st.Rejections != 0 {
		t.Errorf("%d rejections:\n%s", st.Rejections, logs)
	}
	if st.Swaps < uint64(swaps)+1 {
		t.Errorf("%d swaps, want at least %d", st.Swaps, swaps+1)
	}
	// Old versions are unmapped once no reader holds them: exactly the
	// live one remains.
	if n := countMappings(t, inodes); n != 1 {
		t.Errorf("%d mappings of table files after the last swap, want 1", n)
	}
	set.Close()
	if n := countMappings(t, inodes); n != 0 {
		t.Errorf("%d mappings of table files after Close, want 0", n)
	}
}
