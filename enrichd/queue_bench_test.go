package enrichd

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQueue runs the daemon's pipeline from an input that makes b.N
// events, enriched by a customers rule, to a file output on /dev/null,
// without the persistent queue and with it (sync: none, and every
// 500ms): what the queue costs, as events per CPU-second (the metric
// events/cpu-s; ns/op is wall time on a shared machine).
func BenchmarkQueue(b *testing.B) {
	count := 0 // the events of the running sub-benchmark
	RegisterInput(InputKind{Type: "bench-gen", Format: FormatRaw, Finite: true,
		New: func(ic *InputConfig, env *Env) (Input, error) {
			return &benchInput{env: env, stats: env.InputStats(), count: count, done: make(chan struct{})}, nil
		}})
	b.Cleanup(func() { delete(inputKinds, "bench-gen") })
	dir := b.TempDir()
	buildCustomers(b, filepath.Join(dir, "customers.lut"), 10, 1)
	for _, mode := range []string{"off", "none", "500ms"} {
		b.Run("queue="+mode, func(b *testing.B) {
			queue := ""
			if mode != "off" {
				queue = fmt.Sprintf("queue: {type: disk, path: %q, max_bytes: 4GiB, sync: %s}", filepath.Join(b.TempDir(), "q"), mode)
			}
			cfg, err := ParseConfig(filepath.Join(dir, "b.yaml"), fmt.Appendf(nil, `
inputs: [{name: gen, type: bench-gen}]
tables: {path: %q}
rules:
  - {name: customer, table: customers, field: cust, target: customer, columns: ["Customer Id", Email]}
outputs: [{name: devnull, type: file, path: /dev/null}]
pipeline: {workers: 2}
%s
`, dir, queue))
			if err != nil {
				b.Fatal(err)
			}
			count = b.N
			d, err := New(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuTime(b)
			b.ResetTimer()
			if err := d.Run(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := cpuTime(b) - cpu0
			if got := d.eventsOut.Load(); got != uint64(b.N) {
				b.Fatalf("events_out %d, want %d", got, b.N)
			}
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/cpu-s")
		})
	}
}
