package enrichd

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/internal/testfiles"
)

// genInput is an input type made in a test as a new one would be: its
// settings, its Input, one registration. It sends count events, and
// attaches to each batch an acknowledgement that counts the deliveries.
type genInput struct {
	cfg   *InputConfig
	set   *genSettings
	env   *Env
	stats *InputStats
	done  chan struct{}
	acks  *genAcks
}

type genSettings struct{ Count int }

func (g *genSettings) Keys(d *config.Decoder, field string) config.Keys {
	return config.Keys{"count": func(v *yaml.Node) { g.Count, _ = d.Size(v, config.Field(field, "count")) }}
}
func (g *genSettings) SetDefaults() {}
func (g *genSettings) Validate(s config.Scope) {
	s.Require("count", g.Count > 0, "how many events")
}

// genAcks counts the batches sent and those every output delivered.
type genAcks struct{ sent, delivered atomic.Int64 }

type genAck struct {
	Ack
	a *genAcks
}

func (g *genAck) Delivered() { g.a.delivered.Add(1) }

var lastGen *genInput

func (g *genInput) Start() {
	go func() {
		defer close(g.done)
		bt := g.env.Batcher(g.stats, g.cfg.Format, false)
		for i := range g.set.Count {
			bt.Take()
			if bt.Ack() == nil {
				a := &genAck{a: g.acks}
				a.Init(a)
				bt.SetAck(&a.Ack)
				g.acks.sent.Add(1)
			}
			bt.Put(fmt.Appendf(nil, "seq=%d", i), false)
		}
		bt.Flush()
	}()
}
func (g *genInput) Stop(time.Time)        {}
func (g *genInput) Done() <-chan struct{} { return g.done }
func (g *genInput) Close() error          { return nil }
func (g *genInput) Addr() net.Addr        { return nil }
func (g *genInput) Stats() *InputStats    { return g.stats }

// memOutput keeps every line and delivers the buffers it was given from a
// goroutine of its own, after Write has returned, as an output that sends
// them somewhere would.
type memOutput struct {
	st    *OutputStats
	mu    sync.Mutex
	lines bytes.Buffer
	q     chan *Buffer
	wg    sync.WaitGroup
}

func newMemOutput(oc *OutputConfig, env *Env) (Output, error) {
	o := &memOutput{st: env.OutputStats(), q: make(chan *Buffer, 4)}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for b := range o.q {
			o.mu.Lock()
			o.lines.Write(b.B)
			o.mu.Unlock()
			b.Delivery(o.st).Done()
			b.Release()
		}
	}()
	return o, nil
}

var lastMem *memOutput

func (o *memOutput) Write(b *Buffer) error { b.Retain(); o.q <- b; return nil }
func (o *memOutput) Flush() error          { return nil }
func (o *memOutput) Holds() int            { return 5 }
func (o *memOutput) Stats() *OutputStats   { return o.st }
func (o *memOutput) Close() error          { close(o.q); o.wg.Wait(); return nil }

// registerTestKinds registers the test's input and output types until the
// test ends.
func registerTestKinds(t *testing.T) {
	RegisterInput(InputKind{Type: "test-gen", Format: FormatRaw, Finite: true, Settings: func() Settings { return &genSettings{} },
		New: func(ic *InputConfig, env *Env) (Input, error) {
			lastGen = &genInput{cfg: ic, set: ic.Settings.(*genSettings), env: env, stats: env.InputStats(), done: make(chan struct{}), acks: &genAcks{}}
			return lastGen, nil
		}})
	RegisterOutput(OutputKind{Type: "test-mem", New: func(oc *OutputConfig, env *Env) (Output, error) {
		o, err := newMemOutput(oc, env)
		lastMem, _ = o.(*memOutput)
		return o, err
	}})
	t.Cleanup(func() {
		delete(inputKinds, "test-gen")
		delete(outputKinds, "test-mem")
	})
}

// TestNewTypes: an input and an output type added by a registration alone
// are configured, run and exported like the built-in ones; a batch's
// acknowledgement is done once every output has delivered it, and never
// when one output failed to: then the daemon takes no more events, and
// once stopped gives up at shutdown_timeout, not before.
func TestNewTypes(t *testing.T) {
	registerTestKinds(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	// Their keys are checked as the built-in ones are.
	_, err := ParseConfig("e.yaml", []byte("inputs: [{type: test-gen, listen: \"x:1\"}]\noutputs: [{type: test-mem, path: x}]\n"))
	if err == nil || !strings.Contains(err.Error(), "e.yaml:1:10: inputs[0].count: required: how many events") ||
		!strings.Contains(err.Error(), "inputs[0].listen: only for relp, tcp and udp inputs") ||
		!strings.Contains(err.Error(), "outputs[0].path: only for a file output") {
		t.Fatalf("error %v", err)
	}
	const n = 5000
	var stopped atomic.Int64 // when the daemon was stopped, in ns
	for _, tc := range []struct {
		file      string
		delivered bool
	}{{out, true}, {"/dev/full", false}} {
		if _, err := os.Stat(tc.file); tc.file == "/dev/full" && err != nil {
			testfiles.Missing(t, "/dev/full")
		}
		cfg, err := ParseConfig("e.yaml", []byte(fmt.Sprintf(`
inputs: [{name: gen, type: test-gen, count: %d}]
outputs: [{name: mem, type: test-mem}, {name: file, type: file, path: %q, buffer_size: 4KiB}]
pipeline: {batch_size: 100}
http: {listen: "127.0.0.1:0"}
shutdown_timeout: 5s
`, n, tc.file)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if !tc.delivered {
			// The file output cannot write: the daemon keeps retrying it,
			// taking no more events, until it is stopped; then it gives
			// up at shutdown_timeout. Its buffer is smaller than a batch,
			// so that it writes (and fails) at its first batch: with the
			// default 1 MiB it held every event of the run without a
			// write, and the daemon took all of them, as it may, before
			// the first failing write.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			go func() {
				for d.outputs[1].Stats().failures[0].Load() < 2 { // enospc, retried
					time.Sleep(10 * time.Millisecond)
				}
				stopped.Store(time.Now().UnixNano())
				cancel()
			}()
		}
		if err := d.Run(ctx); tc.delivered && err != nil {
			t.Fatal(err)
		} else if !tc.delivered && err == nil {
			t.Fatal("Run returned nil, although the file output never wrote")
		}
		if !tc.delivered {
			// Stopped, the daemon retries the output until
			// shutdown_timeout, then gives up.
			if stopped.Load() == 0 {
				t.Errorf("Run returned before the daemon was stopped")
			} else if took := time.Since(time.Unix(0, stopped.Load())); took < cfg.ShutdownTimeout || took > cfg.ShutdownTimeout+10*time.Second {
				t.Errorf("Run returned %v after the stop, want shutdown_timeout (%v)", took.Round(time.Millisecond), cfg.ShutdownTimeout)
			}
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector{d})
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		exported := false
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == "enrichd_events_in_total" && len(m.GetLabel()) == 2 && m.GetLabel()[0].GetValue() == "gen" && m.GetLabel()[1].GetValue() == "test-gen" {
					exported = m.GetCounter().GetValue() == n
				}
			}
		}
		if !exported && tc.delivered {
			t.Errorf("enrichd_events_in_total{input=\"gen\",type=\"test-gen\"} is not %d", n)
		}
		a := lastGen.acks
		lastMem.mu.Lock()
		got := strings.Count(lastMem.lines.String(), "\n")
		lastMem.mu.Unlock()
		if tc.delivered && got != n {
			t.Fatalf("%s: the new output got %d lines, want %d", tc.file, got, n)
		} else if !tc.delivered && got >= n {
			t.Errorf("%s: the new output got all %d lines, although the daemon was to stop taking events", tc.file, got)
		}
		switch {
		case a.sent.Load() < n/100 && tc.delivered, a.sent.Load() == 0:
			t.Fatalf("%d batches acknowledged, want at least %d", a.sent.Load(), n/100)
		case tc.delivered && a.delivered.Load() != a.sent.Load():
			t.Errorf("%s: %d of %d batches delivered", tc.file, a.delivered.Load(), a.sent.Load())
		case !tc.delivered && a.delivered.Load() != 0:
			t.Errorf("%s: %d batches reported delivered although the file output failed", tc.file, a.delivered.Load())
		}
		if tc.delivered {
			if lines := readLines(t, out); len(lines) != n {
				t.Errorf("file output: %d lines", len(lines))
			}
		}
		// Counted out: what every output delivered, nothing when one
		// failed (the events the memory output got are not out).
		if out := d.eventsOut.Load(); tc.delivered && out != n || !tc.delivered && out != 0 {
			t.Errorf("%s: events_out %d, want %d", tc.file, out, map[bool]int{true: n, false: 0}[tc.delivered])
		}
	}
}
