package kafkae2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// relayLines is how many of enrichd's output lines kgorelay produces in
// turn.
const relayLines = 4096

var relayBuild struct {
	once sync.Once
	bin  string
	err  error
}

// BenchmarkKgoRelay is BenchmarkKafkaToKafka with kgorelay in place of
// enrichd: the same events, topics, brokers and CPU, and as values the
// lines enrichd writes for those events, but nothing parsed, looked up
// or encoded (kgorelay/main.go). Its events per CPU-second are what the
// Kafka client and the sockets to the brokers cost a relay between
// topics on kgo, with no engine: the floor under the Kafka path's cost
// beyond the engine's, to set beside BenchmarkTCPPath's whole cost in
// the same run.
//
//	go test -run '^$' -bench 'KgoRelay|KafkaToKafka$|TCPPath' -benchtime 2000000x ./enrichd/kafkae2e/
//
// KAFKAE2E_RELAY_FLAGS adds flags to kgorelay's, e.g. "--linger 10ms" or
// "--acks leader", to try other settings of the client.
func BenchmarkKgoRelay(b *testing.B) {
	lines := enrichedLines(b, relayLines)
	bin := kgorelayBin(b)
	pinSelf(b)
	c := kafkatest.Start(b, 3, 12, "in", "out")
	c.Produce(b, "in", 0, b.N, event(benchRows))
	addr := freeAddr(b)
	args := append([]string{"--brokers", strings.Join(c.Addrs, ","), "--in", "in", "--out", "out",
		"--lines", lines, "--listen", addr}, strings.Fields(os.Getenv("KAFKAE2E_RELAY_FLAGS"))...)
	p := startCmd(b, "kgorelay", addr, pinnedCmd(true, bin, args...))
	const sample = "kgorelay_produced_total"
	// The steady state starts with the first record acknowledged: the
	// group has been joined, and there are no tables to load.
	var cpu0 time.Duration
	var out0 float64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if out0 = p.metrics()[sample]; out0 > 0 {
			cpu0 = p.cpuNow(b)
			break
		}
		if p.exited() || time.Now().After(deadline) {
			b.Fatalf("kgorelay produced nothing within a minute (exited: %v)", p.exited())
		}
	}
	b.ResetTimer()
	first := waitAll(b, p, sample)
	cpu1 := p.cpuNow(b)
	el := time.Since(first)
	b.StopTimer()
	p.term(b)
	// What the brokers hold, not what kgorelay counted.
	if n := c.ReadAll(b, "out", time.Minute, func([]byte) {}); n != b.N {
		b.Fatalf("the output topic holds %d records, not %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	report(b, p, cpu0, cpu1, out0)
}

// kgorelayBin builds kgorelay once.
func kgorelayBin(b *testing.B) string {
	b.Helper()
	relayBuild.once.Do(func() {
		relayBuild.bin = filepath.Join(workDir, "kgorelay")
		out, err := exec.Command("go", "build", "-o", relayBuild.bin, "github.com/lutkit/lutkit/enrichd/kafkae2e/kgorelay").CombinedOutput()
		if err != nil {
			relayBuild.err = fmt.Errorf("building kgorelay: %w\n%s", err, out)
		}
	})
	if relayBuild.err != nil {
		b.Fatal(relayBuild.err)
	}
	return relayBuild.bin
}

// enrichedLines runs the benchmarks' enrichd on events [0, n) from TCP to
// a file, and returns the file's path: the lines enrichd writes for
// them.
func enrichedLines(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "enriched.jsonl")
	listen, httpAddr := freeAddr(b), freeAddr(b)
	cfg := tcpConfig(b, listen, httpAddr, fmt.Sprintf("[{name: sink, type: file, path: %q}]", path))
	p := start(b, "enrichd-lines", cfg, &conf{httpAddr: httpAddr})
	p.waitReady(b)
	conn, err := net.Dial("tcp", listen)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Write(framed(0, n)); err != nil {
		b.Fatal(err)
	}
	conn.Close()
	for deadline := time.Now().Add(time.Minute); p.metrics()["enrichd_events_out_total"] < float64(n); time.Sleep(20 * time.Millisecond) {
		if p.exited() || time.Now().After(deadline) {
			b.Fatalf("enrichd wrote %v of %d events in a minute (exited: %v)", p.metrics()["enrichd_events_out_total"], n, p.exited())
		}
	}
	p.term(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if got := bytes.Count(data, []byte("\n")); got != n {
		b.Fatalf("%s holds %d lines, not %d", path, got, n)
	}
	return path
}
