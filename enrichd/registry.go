package enrichd

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/internal/config"
)

// InputKind describes one type of input to the daemon. An input type is
// one file that defines its settings (if it has any beyond the common
// ones), implements Input, and registers itself from an init function:
//
//	func init() {
//		RegisterInput(InputKind{Type: "tcp", Endpoint: EndpointListen, Format: FormatSyslog,
//			Settings: func() Settings { return &TCPInputConfig{} }, New: newTCPInput})
//	}
//
// Nothing else changes: the configuration takes its keys, the daemon runs
// it, and its counters are exported with every input's.
type InputKind struct {
	Type InputType
	// Endpoint is the common key that locates the input (listen, path),
	// required for it and refused for other types; EndpointNone for none.
	Endpoint Endpoint
	// Network is the network of its listener when Endpoint is
	// EndpointListen: "tcp" (also when empty) or "udp".
	Network string
	// Format is the format of its events when the configuration gives
	// none.
	Format Format
	// Settings returns new, empty settings of the type; nil when it has
	// none beyond the common ones.
	Settings func() Settings
	// Finite is set for inputs that end by themselves (files): when every
	// input is finite, the daemon shuts down once they are all Done.
	Finite bool
	// ExactlyOnce is set for inputs that can take part in a pipeline with
	// delivery: exactly_once (see Env.Delivery).
	ExactlyOnce bool
	// New makes an input of the configuration, ready to Start: it binds
	// its listener or opens its source now, so that a daemon that starts
	// is one that can read. ic.Settings holds the type's settings.
	New func(ic *InputConfig, env *Env) (Input, error)
}

// OutputKind describes one type of output, as InputKind does an input.
type OutputKind struct {
	Type OutputType
	// Endpoint is the common key that locates the output (path, address).
	Endpoint Endpoint
	// Settings returns new, empty settings of the type; nil when it has
	// none beyond the common ones.
	Settings func() Settings
	// ExactlyOnce is set for outputs that can take part in a pipeline
	// with delivery: exactly_once (see Env.Delivery).
	ExactlyOnce bool
	// New makes an output of the configuration, ready to Write.
	New func(oc *OutputConfig, env *Env) (Output, error)
}

// Env is what the daemon gives the inputs and outputs it makes.
type Env struct {
	// Log is the daemon's logger, with the input's or output's name.
	Log *slog.Logger
	// Stop is closed when the daemon gives up on shutdown (after
	// shutdown_timeout): retries and reconnections must end then.
	Stop <-chan struct{}
	// Delivery is the pipeline's guarantee. With ExactlyOnce the input
	// and the output (one of each, of types that support it) are made to
	// work together: the output is made first, and they meet through
	// Shared.
	Delivery Guarantee
	shared   *shared
	q        *batchQueue
	eng      *engine.Engine
	name     string
	typ      string
	deadline func() time.Time
	out      *atomic.Uint64 // the daemon's events_out
}

// CountDelivered counts events of batches whose Ack was set up with
// InitDeferred as delivered: in events_out and in the delivered events of
// each of outputs (an output's OutputStats).
func (e *Env) CountDelivered(events uint64, outputs ...*OutputStats) {
	e.out.Add(events)
	for _, st := range outputs {
		st.Delivered.Add(events)
	}
}

// ShutdownDeadline returns when the daemon's shutdown must be done
// (shutdown_timeout after it began, or from now before it has): what an
// input or output still retries on shutdown (a last commit, a produce)
// gives up then.
func (e *Env) ShutdownDeadline() time.Time { return e.deadline() }

// Shared returns the value the daemon's inputs and outputs share under
// key, made by mk on the first call: how an input and an output of one
// daemon that work together (delivery: exactly_once) meet.
func (e *Env) Shared(key string, mk func() any) any {
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	v, ok := e.shared.m[key]
	if !ok {
		v = mk()
		e.shared.m[key] = v
	}
	return v
}

// shared holds the values of Env.Shared.
type shared struct {
	mu sync.Mutex
	m  map[string]any
}

// Batcher returns a batcher for one goroutine of an input that reads
// messages of format f and counts them in st. A dropping batcher never
// waits for a free batch or room in the queue: it drops and counts (UDP).
func (e *Env) Batcher(st *InputStats, f Format, drop bool) *Batcher {
	return &Batcher{q: e.q, in: st, fmt: f.code(), drop: drop}
}

// InputStats returns new counters for the input.
func (e *Env) InputStats() *InputStats { return &InputStats{Name: e.name, Type: e.typ} }

// OutputStats returns new counters for the output.
func (e *Env) OutputStats() *OutputStats { return &OutputStats{Name: e.name, Type: e.typ} }

// EventField returns the index in a buffer's Field of an event field an
// output asked for (see EventFielder), or -1 for "".
func (e *Env) EventField(name string) int { return e.eng.EventField(name) }

// EventFielder is implemented by the settings of outputs that send events
// one by one (each line on its own) and by the value of some of their
// fields (a message key, a topic): Buffer.Line and Buffer.Field then give
// them.
type EventFielder interface {
	EventFields() []string
}

var (
	inputKinds  = map[InputType]*InputKind{}
	outputKinds = map[OutputType]*OutputKind{}
)

// RegisterInput adds a type of input. It panics if the type is taken: a
// registration is a program's own code, not input.
func RegisterInput(k InputKind) {
	if _, dup := inputKinds[k.Type]; dup || k.Type == "" {
		panic(fmt.Sprintf("enrichd: input type %q registered twice", k.Type))
	}
	inputKinds[k.Type] = &k
}

// RegisterOutput adds a type of output; it panics if the type is taken.
func RegisterOutput(k OutputKind) {
	if _, dup := outputKinds[k.Type]; dup || k.Type == "" {
		panic(fmt.Sprintf("enrichd: output type %q registered twice", k.Type))
	}
	outputKinds[k.Type] = &k
}

func sortedTypes[T ~string, K any](m map[T]K) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, string(t))
	}
	slices.Sort(out)
	return out
}

func inputTypes() []string  { return sortedTypes(inputKinds) }
func outputTypes() []string { return sortedTypes(outputKinds) }

// inputEndpoints lists the input types of each endpoint.
func inputEndpoints() map[Endpoint][]string {
	m := map[Endpoint][]string{}
	for t, k := range inputKinds {
		m[k.Endpoint] = append(m[k.Endpoint], string(t))
	}
	return m
}

// outputEndpoints lists the output types of each endpoint.
func outputEndpoints() map[Endpoint][]string {
	m := map[Endpoint][]string{}
	for t, k := range outputKinds {
		m[k.Endpoint] = append(m[k.Endpoint], string(t))
	}
	return m
}

// Input returns the input named name, or nil.
func (d *Daemon) Input(name string) Input {
	d.inMu.RLock()
	defer d.inMu.RUnlock()
	for i, in := range d.inputs {
		if d.inCfgs[i].Name == name {
			return in
		}
	}
	return nil
}

// Output returns the output named name, or nil.
func (d *Daemon) Output(name string) Output {
	d.outMu.RLock()
	defer d.outMu.RUnlock()
	for i, o := range d.outputs {
		if d.outCfgs[i].Name == name {
			return o
		}
	}
	return nil
}

// ResolvePath anchors a path of a type's settings at dir, the
// configuration file's directory (filepath.Dir of Decoder.File); "", "-"
// and absolute paths stay as they are.
func ResolvePath(dir, p string) string { return resolve(dir, p) }

// ReadSecret reads a password or token of a type's settings from the file
// at path (n and field locate the key, for errors): surrounding white
// space is dropped, and an empty file is an error.
func ReadSecret(d *config.Decoder, n *yaml.Node, field, path string) string {
	return readSecret(d, n, field, path)
}
