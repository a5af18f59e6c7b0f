package kafkae2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// per CPU-second of the enrichd process, in the steady state and over
// its whole life (cpu_test.go). kfake runs in the benchmark's process,
// on CPUs other than enrichd's (pin_test.go; KAFKAE2E_PIN=0 shares
// them).
//
//	go test -run XXX -bench KafkaToKafka -benchtime 1000000x ./enrichd/kafkae2e/
func BenchmarkKafkaToKafka(b *testing.B) { benchKafka(b, &conf{}) }

// BenchmarkKafkaToKafkaExactlyOnce is BenchmarkKafkaToKafka with
// pipeline.delivery: exactly_once (transactions of commit_interval 1s or
// max_uncommitted 100,000 events, the defaults).
func BenchmarkKafkaToKafkaExactlyOnce(b *testing.B) {
	benchKafka(b, &conf{pipeline: ", delivery: exactly_once"})
}

// benchDir returns the benchmarks' table directory, built once.
func benchDir(b *testing.B) string {
	b.Helper()
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
	return benchTables.dir
}

// BenchmarkKafkaInput is BenchmarkKafkaToKafka with its output written
// to /dev/null instead of a topic: the Kafka input's share of the path,
// beside BenchmarkTCPPath's TCP input to the same output.
func BenchmarkKafkaInput(b *testing.B) {
	benchKafka(b, &conf{outputs: "[{name: sink, type: file, path: /dev/null}]"})
}

// BenchmarkTCPToKafka is BenchmarkTCPPath with the Kafka output of
// BenchmarkKafkaToKafka: the Kafka output's share of the path.
func BenchmarkTCPToKafka(b *testing.B) {
	c := kafkatest.Start(b, 3, 12, "out")
	brokers := `["` + strings.Join(c.Addrs, `","`) + `"]`
	benchTCP(b, fmt.Sprintf("[{name: kafka, type: kafka, kafka: {brokers: %s, topic: out}}]", brokers), mProduced)
}

func benchKafka(b *testing.B, cf *conf) {
	cf.tables = benchDir(b)
	pinSelf(b)
	cf.pin = true
	c := kafkatest.Start(b, 3, 12, "in", "out")
	c.Produce(b, "in", 0, b.N, event(benchRows))

	sample := mProduced
	if cf.outputs != "" {
		sample = "enrichd_events_out_total"
	}
	p := start1(b, c, cf)
	cpu0, out0 := p.steady(b, sample)
	b.ResetTimer()
	first := waitAll(b, p, sample)
	cpu1 := p.cpuNow(b)
	el := time.Since(first)
	b.StopTimer()
	p.term(b)
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	report(b, p, cpu0, cpu1, out0)
	if b.N >= 100_000 {
		b.Logf("%d events in %v; enrichd used %v of CPU for the %.0f after the steady state, %v in all",
			b.N, el.Round(time.Millisecond), cpu1-cpu0, float64(b.N)-out0, p.cpu().Round(time.Millisecond))
	}
}

// BenchmarkTCPPath is the TCP syslog path of the same binary, on the
// same events, tables and rules as BenchmarkKafkaToKafka: b.N events
// sent over one TCP connection (octet-counted frames, as rsyslog sends
// them), written as JSON lines to /dev/null. enrichd runs on a CPU
// of its own, as in BenchmarkKafkaToKafka. It reports events per
// CPU-second of the enrichd process as BenchmarkKafkaToKafka does, to
// compare with the Kafka path's.
//
//	go test -run XXX -bench 'KafkaToKafka$|TCPPath' -benchtime 1000000x ./enrichd/kafkae2e/
//
// Writing to /dev/null copies nothing, where a topic's every line is
// copied into a produce request and then into the kernel's socket
// buffers; BenchmarkTCPToFile and BenchmarkTCPToTCP are the same path
// with outputs that move the lines: a file, and a TCP connection to a
// reader in the benchmark's process.
func BenchmarkTCPPath(b *testing.B) {
	benchTCP(b, "[{name: sink, type: file, path: /dev/null}]", "enrichd_events_out_total")
}

// BenchmarkTCPToFile is BenchmarkTCPPath writing to a file, as the peer
// harness's enrichd does (bench/peers).
func BenchmarkTCPToFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "out.jsonl")
	benchTCP(b, fmt.Sprintf("[{name: sink, type: file, path: %q}]", path), "enrichd_events_out_total")
}

// BenchmarkTCPToTCP is BenchmarkTCPPath writing to a TCP connection,
// whose reader (on the benchmark's CPUs) discards the lines: the bytes
// cross a loopback socket as they do to a broker.
func BenchmarkTCPToTCP(b *testing.B) {
	benchTCP(b, fmt.Sprintf("[{name: sink, type: tcp, address: %q}]", sink(b, false)), "enrichd_events_out_total")
}

// BenchmarkTCPToTCPKept is BenchmarkTCPToTCP with a reader that keeps
// every byte it reads in memory until the benchmark ends, as a broker
// keeps its log (kfake in memory): enrichd does the same work, beside
// another core's writes to new memory.
func BenchmarkTCPToTCPKept(b *testing.B) {
	benchTCP(b, fmt.Sprintf("[{name: sink, type: tcp, address: %q}]", sink(b, true)), "enrichd_events_out_total")
}

// sink listens on loopback and reads every connection to its end,
// keeping what it reads or not; it returns the address.
func sink(b *testing.B, keep bool) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var kept [][]byte // until the reader ends, after the benchmark
	done := make(chan struct{})
	b.Cleanup(func() {
		l.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !keep {
				_, _ = io.Copy(io.Discard, c)
			}
			for keep {
				buf := make([]byte, 64<<10)
				n, err := c.Read(buf)
				kept = append(kept, buf[:n])
				if err != nil {
					break
				}
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// benchTCP sends b.N framed events over TCP to an enrichd writing to
// outputs (YAML), and reports as benchKafka does; sample is the metric
// that counts the events out.
func benchTCP(b *testing.B, outputs, sample string) {
	listen, httpAddr := freeAddr(b), freeAddr(b)
	path := tcpConfig(b, listen, httpAddr, outputs)
	// The events, framed, before the timer starts.
	buf := framed(0, b.N)
	pinSelf(b)
	p := start(b, "enrichd", path, &conf{httpAddr: httpAddr, pin: true})
	p.waitReady(b)
	cpu0, _ := p.steady(b, sample)
	conn, err := net.Dial("tcp", listen)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	begin := time.Now()
	if _, err := conn.Write(buf); err != nil {
		b.Fatal(err)
	}
	conn.Close()
	waitAll(b, p, sample)
	cpu1 := p.cpuNow(b)
	el := time.Since(begin)
	b.StopTimer()
	p.term(b)
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	report(b, p, cpu0, cpu1, 0)
}

// framed returns the events [from, to) of the benchmarks, each in an
// octet-counted frame, as rsyslog sends them over TCP.
func framed(from, to int) []byte {
	gen := event(benchRows)
	var buf []byte
	for i := from; i < to; i++ {
		e := gen(i)
		buf = strconv.AppendInt(buf, int64(len(e)), 10)
		buf = append(buf, ' ')
		buf = append(buf, e...)
	}
	return buf
}

// tcpConfig writes the configuration of an enrichd that reads TCP at
// listen, does the lookups of the Kafka benchmarks, and writes to
// outputs (YAML); it returns its path.
func tcpConfig(b *testing.B, listen, httpAddr, outputs string) string {
	b.Helper()
	dir := benchDir(b)
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: %q}
tables: {path: %q, verify: none}
rules:
  - {name: customer, table: customers, field: cust, target: customer}
  - {name: geo, table: geo, field: src, target: source.geo,
     mmdb_fields: {country_code: country_iso_code, city: city_name}}
outputs: %s
pipeline: {kv_fields: all}
http: {listen: %q}
`, listen, dir, outputs, httpAddr)
	path := filepath.Join(b.TempDir(), "tcp.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// waitAll waits until the sample of p's metrics reaches b.N, and returns
// when it was first above 0. It asks for the metrics every 50 ms until
// 95% of the events are out (5 ms before the first), then every 2 ms: each scrape costs enrichd
// about 0.3 ms of CPU, and one every 5 ms was 15% of the Kafka path's.
func waitAll(b *testing.B, p *proc, sample string) (first time.Time) {
	b.Helper()
	deadline := time.Now().Add(10*time.Minute + time.Duration(b.N)*50*time.Microsecond)
	for {
		out := p.metrics()[sample]
		if first.IsZero() && out > 0 {
			first = time.Now()
		}
		if out >= float64(b.N) {
			return first
		}
		if p.exited() || time.Now().After(deadline) {
			b.Fatalf("%v of %d events out; exited: %v", out, b.N, p.exited())
		}
		switch {
		case first.IsZero():
			time.Sleep(5 * time.Millisecond)
		case out < 0.95*float64(b.N):
			time.Sleep(50 * time.Millisecond)
		default:
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// BenchmarkKafkaToKafkaCompressed is BenchmarkKafkaToKafka with the
// output's record batches compressed: fewer bytes for the kernel to send.
func BenchmarkKafkaToKafkaCompressed(b *testing.B) {
	for _, codec := range []string{"snappy", "lz4", "zstd"} {
		b.Run(codec, func(b *testing.B) { benchKafka(b, &conf{output: ", compression: " + codec}) })
	}
}
