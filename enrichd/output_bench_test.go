package enrichd

import (
	"log/slog"
	"net"
	"testing"
	"time"
)

// benchInput sends count raw events as fast as the pipeline takes them,
// without an acknowledgement (as the tcp and udp inputs do).
type benchInput struct {
	env   *Env
	stats *InputStats
	count int
	done  chan struct{}
}

func (g *benchInput) Start() {
	go func() {
		defer close(g.done)
		bt := g.env.Batcher(g.stats, FormatRaw, false)
		msg := []byte("<13>1 2026-01-02T03:04:05Z host app 123 - - seq=1234567 cust=5 user=alice action=login")
		for range g.count {
			bt.Take()
			bt.Put(msg, false)
		}
		bt.Flush()
	}()
}
func (g *benchInput) Stop(time.Time)        {}
func (g *benchInput) Done() <-chan struct{} { return g.done }
func (g *benchInput) Close() error          { return nil }
func (g *benchInput) Addr() net.Addr        { return nil }
func (g *benchInput) Stats() *InputStats    { return g.stats }

// BenchmarkOutputLoop runs the daemon's pipeline, with no rules, from an
// input that makes b.N events to a file output on /dev/null: the cost of
// the batches' way through the workers and the output loop to a stream
// output.
func BenchmarkOutputLoop(b *testing.B) {
	RegisterInput(InputKind{Type: "bench-gen", Format: FormatRaw, Finite: true,
		New: func(ic *InputConfig, env *Env) (Input, error) {
			return &benchInput{env: env, stats: env.InputStats(), count: b.N, done: make(chan struct{})}, nil
		}})
	b.Cleanup(func() { delete(inputKinds, "bench-gen") })
	cfg, err := ParseConfig("b.yaml", []byte(`
inputs: [{name: gen, type: bench-gen}]
outputs: [{name: devnull, type: file, path: /dev/null}]
pipeline: {workers: 2}
`))
	if err != nil {
		b.Fatal(err)
	}
	d, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if err := d.Run(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if got := d.eventsOut.Load(); got != uint64(b.N) {
		b.Fatalf("events_out %d, want %d", got, b.N)
	}
}
