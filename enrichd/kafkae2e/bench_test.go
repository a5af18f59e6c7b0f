package kafkae2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// benchRows is the size of the benchmark's customers table, as in the
// TCP syslog figures of BENCHMARKS.md.
const benchRows = 2_000_000

var benchTables struct {
	once sync.Once
	dir  string
}

// BenchmarkKafkaToKafka: b.N events, produced to the input topic before
// the timer starts, go through one enrichd process (two lookups per
// event: every column of a 2M-row customers table, country and city from
// the city .mmdb) to the output topic. It reports events/s, from the
// first event out to the last acknowledged by the brokers, and events
// per CPU-second of the enrichd process (all of its life: start, group
// join, shutdown). kfake runs in the benchmark's process and competes
// with enrichd for the CPUs.
//
//	go test -run XXX -bench KafkaToKafka -benchtime 1000000x ./enrichd/kafkae2e/
func BenchmarkKafkaToKafka(b *testing.B) {
	benchTables.once.Do(func() {
		dir := filepath.Join(workDir, "bench-tables")
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		kafkatest.BuildCustomers(b, filepath.Join(dir, "customers.lut"), benchRows, 1)
		b.Logf("%d-row customers table built in %v", benchRows, time.Since(start).Round(time.Millisecond))
		linkGeo(b, dir)
		benchTables.dir = dir
	})
	if benchTables.dir == "" {
		b.Fatal("no table directory")
	}
	cf := &conf{tables: benchTables.dir}
	c := kafkatest.Start(b, 3, 12, "in", "out")
	c.Produce(b, "in", 0, b.N, event(benchRows))

	p := start1(b, c, cf)
	b.ResetTimer()
	var first time.Time
	deadline := time.Now().Add(10*time.Minute + time.Duration(b.N)*50*time.Microsecond)
	for {
		out := p.metrics()[mProduced]
		if first.IsZero() && out > 0 {
			first = time.Now()
		}
		if out >= float64(b.N) {
			break
		}
		if p.exited() || time.Now().After(deadline) {
			b.Fatalf("%v of %d events out; exited: %v", out, b.N, p.exited())
		}
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(first)
	b.StopTimer()
	p.term(b)
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/p.cpu().Seconds(), "events/cpu-s")
	if b.N >= 100_000 {
		b.Logf("%d events in %v; enrichd used %v of CPU", b.N, el.Round(time.Millisecond), p.cpu().Round(time.Millisecond))
	}
}
