package syslog

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	daemon "github.com/lutkit/lutkit/enrichd"
)

// relpBenchEvents is how many events the generator input of the running
// benchmark makes.
var relpBenchEvents int

var registerRELPBenchInput = sync.OnceFunc(func() {
	daemon.RegisterInput(daemon.InputKind{Type: "relp-bench-gen", Format: daemon.FormatRaw, Finite: true,
		New: func(ic *daemon.InputConfig, env *daemon.Env) (daemon.Input, error) {
			return &genInput{env: env, stats: env.InputStats(), count: relpBenchEvents, done: make(chan struct{})}, nil
		}})
})

// genInput makes count numbered events as fast as the pipeline takes
// them.
type genInput struct {
	env   *daemon.Env
	stats *daemon.InputStats
	count int
	done  chan struct{}
}

func (g *genInput) Start() {
	go func() {
		defer close(g.done)
		bt := g.env.Batcher(g.stats, daemon.FormatRaw, false)
		msg := []byte("<14>1 2026-12-03T08:00:00.000Z web-1 bench - - - seq=")
		n := len(msg)
		for i := range g.count {
			bt.Take()
			msg = strconv.AppendInt(msg[:n], int64(i), 10)
			msg = append(msg, " user=alice action=login cust=5 src=10.1.2.3"...)
			bt.Put(msg, false)
		}
		bt.Flush()
	}()
}
func (g *genInput) Stop(time.Time)            {}
func (g *genInput) Done() <-chan struct{}     { return g.done }
func (g *genInput) Close() error              { return nil }
func (g *genInput) Addr() net.Addr            { return nil }
func (g *genInput) Stats() *daemon.InputStats { return g.stats }

// cpuTime is the CPU time (user and system) of this process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRELPOutput runs enrichd in this process, from an input that
// makes b.N events to one output: "relp" to rsyslog's imrelp (the
// default window of 128, and a window of 1024), and "tcp" to imtcp of the
// same rsyslogd, whose one ruleset (a Direct queue, as
// the RELP tests run it) writes every message to /dev/null. A relp run
// ends once imrelp has acknowledged every event, a tcp run once the
// kernel took the last byte. events/CPU-s counts this process's CPU time
// only (enrichd's; rsyslogd is another process); the two are measured in
// one run, one after the other, against the same receiver, so their
// ratio is what RELP costs.
func BenchmarkRELPOutput(b *testing.B) {
	rsyslogd(b)
	registerRELPBenchInput()
	dir := b.TempDir()
	relpPort, tcpPort := freePort(b), freePort(b)
	conf := fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k")
module(load="imrelp")
module(load="imtcp")
input(type="imrelp" address="127.0.0.1" port=%q ruleset="sink")
input(type="imtcp" address="127.0.0.1" port=%q ruleset="sink")
template(name="raw" type="string" string="%%rawmsg%%\n")
ruleset(name="sink" queue.type="Direct") {
  action(type="omfile" file="/dev/null" template="raw")
}
`, dir, relpPort, tcpPort)
	rs := startRsyslog(b, dir, conf, "127.0.0.1:"+tcpPort)
	defer rs.stop(b)
	for _, c := range []struct{ name, output string }{
		{"relp", fmt.Sprintf(`{name: out, type: relp, address: "127.0.0.1:%s"}`, relpPort)},
		{"relp-window-1024", fmt.Sprintf(`{name: out, type: relp, address: "127.0.0.1:%s", window: 1024}`, relpPort)},
		{"tcp", fmt.Sprintf(`{name: out, type: tcp, address: "127.0.0.1:%s"}`, tcpPort)},
	} {
		b.Run(c.name, func(b *testing.B) {
			relpBenchEvents = b.N
			cfg, err := daemon.ParseConfig(filepath.Join(dir, "b.yaml"), []byte(fmt.Sprintf(`
inputs: [{name: gen, type: relp-bench-gen}]
outputs: [%s]
pipeline: {workers: 1}
`, c.output)))
			if err != nil {
				b.Fatal(err)
			}
			d, err := daemon.New(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			st := d.Output("out").Stats()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			if err := d.Run(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/CPU-s")
			if got := st.Delivered.Load(); got != uint64(b.N) {
				b.Fatalf("the output delivered %d events, want %d", got, b.N)
			}
			if rs.exited() {
				b.Fatalf("rsyslogd exited: %v\n%s", rs.err, rs.output())
			}
		})
	}
}
