package kafkae2e

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// The benchmarks split the machine's CPUs: enrichd runs on CPU 0 and the
// benchmark's own process (kfake's three brokers, the TCP sender) on the
// others, as brokers and senders on other machines would, so that
// enrichd's CPU per event is not inflated by the brokers sharing its
// cores and caches. KAFKAE2E_PIN=0 lets both use every CPU.
//
// A Kafka benchmark run with the brokers on enrichd's cores measured
// 0.66M events per CPU-second of enrichd, and 0.90M on cores of its own,
// with the same binary (BENCHMARKS.md).

// pinned reports whether benchmarks split the CPUs.
func pinned() bool {
	return os.Getenv("KAFKAE2E_PIN") != "0" && runtime.NumCPU() >= 2
}

// pinSelf moves every thread of the benchmark's process off CPU 0 until
// b ends; threads started later inherit the set of the thread that
// starts them.
func pinSelf(b *testing.B) {
	b.Helper()
	if !pinned() {
		return
	}
	var rest, all unix.CPUSet
	for c := range runtime.NumCPU() {
		all.Set(c)
		if c > 0 {
			rest.Set(c)
		}
	}
	setAll := func(set *unix.CPUSet) {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			// A thread that ended meanwhile is no error.
			_ = unix.SchedSetaffinity(tid, set)
		}
	}
	setAll(&rest)
	b.Cleanup(func() { setAll(&all) })
}

// enrichdCmd is the command that runs enrichd with args: on CPU 0 alone
// (taskset, util-linux) when the benchmarks split the CPUs and pin is
// set.
func enrichdCmd(pin bool, args ...string) *exec.Cmd { return pinnedCmd(pin, enrichdBin, args...) }

// pinnedCmd is the command that runs bin with args, on CPU 0 alone as
// enrichdCmd runs enrichd.
func pinnedCmd(pin bool, bin string, args ...string) *exec.Cmd {
	if pin && pinned() {
		return exec.Command("taskset", append([]string{"-c", "0", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}
