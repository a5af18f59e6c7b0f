package enrichd

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/internal/config"
)

// The bounds of the settings that size what the daemon allocates at
// start: beyond them a value is a mistake (a unit left out, a digit too
// many), whatever the machine.
const (
	MaxWorkers     = 1024
	MaxBatchSize   = 1 << 20 // pipeline.batch_size, events
	MaxBatches     = 1 << 20 // pipeline.batches
	MaxBufferBytes = 1 << 30 // pipeline.batch_bytes, inputs[].max_message_size, outputs[].buffer_size
)

// checkSize reports n (of key) when it is negative or above most.
func checkSize(s config.Scope, key string, n, most int) {
	if n < 0 || n > most {
		s.Errorf(key, "must be 0 (the default) to %s, not %s", sizeOrCount(key, most), sizeOrCount(key, n))
	}
}

// sizeOrCount writes n as bytes for the keys that are sizes in bytes.
func sizeOrCount(key string, n int) string {
	switch key {
	case "batch_bytes", "max_message_size", "buffer_size":
		return byteText(int64(n))
	}
	return strconv.Itoa(n)
}

// byteText writes n bytes in the largest binary unit that divides it
// with fewer than five digits (as the configuration reads sizes), else
// to a tenth of the largest unit that keeps a digit before the point.
func byteText(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	if n == 0 {
		return "0B"
	}
	for u := len(units) - 1; u >= 0; u-- {
		if d := int64(1) << (10 * u); n%d == 0 && n/d < 10000 {
			return strconv.FormatInt(n/d, 10) + units[u]
		}
	}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + units[u]
}

// Preallocation is what the daemon allocates at start for its buffers,
// by what takes it: the defaults are applied to the configuration
// first (Load does).
type Preallocation struct {
	Batches      int64 // pipeline.batches input batches of batch_bytes + the largest max_message_size, and their events
	OutBuffers   int64 // the workers' output buffers, 2 x batch_bytes each
	QueueBuffers int64 // the persistent queue's read buffers, 2 x batch_bytes each
	Outputs      int64 // the outputs' buffer_size
}

// Total is the sum.
func (p Preallocation) Total() int64 { return p.Batches + p.OutBuffers + p.QueueBuffers + p.Outputs }

// Preallocated returns what New allocates for cfg's buffers, the
// outputs' holds left out (a few buffers more).
func (cfg *Config) Preallocated() Preallocation {
	pc := cfg.Pipeline
	nb := int64(pc.Batches)
	if nb == 0 {
		nb = 4*int64(pc.Workers) + 8
	}
	var p Preallocation
	p.Batches = nb * (int64(pc.BatchBytes) + int64(maxMsgSize(cfg)) + int64(pc.BatchSize)*int64(unsafe.Sizeof(engine.Msg{})))
	nout := 2*int64(pc.Workers) + 2
	p.OutBuffers = nout * 2 * int64(pc.BatchBytes)
	if cfg.Queue.Enabled() {
		p.QueueBuffers = nout * 2 * int64(pc.BatchBytes)
	}
	for _, o := range cfg.Outputs {
		p.Outputs += int64(o.BufferSize)
	}
	return p
}

// CheckMemory fails when the buffers cfg makes the daemon allocate at
// start are more than the memory of this machine (or of its cgroup), as
// a clear error rather than the Go runtime's crash.
func CheckMemory(cfg *Config) error {
	p := cfg.Preallocated()
	have, from := machineMemory()
	if have <= 0 || p.Total() <= have {
		return nil
	}
	var parts []string
	for _, c := range []struct {
		what string
		n    int64
	}{{"input batches", p.Batches}, {"output buffers", p.OutBuffers}, {"queue buffers", p.QueueBuffers}, {"outputs' buffer_size", p.Outputs}} {
		if c.n > 0 {
			parts = append(parts, c.what+" "+byteText(c.n))
		}
	}
	return fmt.Errorf("pipeline: the buffers would take %s at start (%s), more than the %s of memory here (%s); lower pipeline.batch_bytes, pipeline.batches, pipeline.workers or pipeline.batch_size, inputs[].max_message_size or outputs[].buffer_size",
		byteText(p.Total()), strings.Join(parts, ", "), byteText(have), from)
}

// machineMemory returns the memory the process may use: its cgroup's
// limit (cgroup v2 memory.max) when there is one, else the machine's
// (MemTotal); 0 when neither can be read.
func machineMemory() (int64, string) {
	total, from := int64(0), ""
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:")); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
				if err == nil {
					total, from = kb<<10, "MemTotal in /proc/meminfo"
				}
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total, from = n, "the cgroup's memory.max"
		}
	}
	return total, from
}
