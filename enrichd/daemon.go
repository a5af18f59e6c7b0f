package enrichd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/enrichd/internal/listen"
	"github.com/lutkit/lutkit/enrichd/serve"
	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/internal/retry"
	"github.com/lutkit/lutkit/tables"
)

// Daemon is a running enrichd, built from a Config: inputs, workers that
// run the engine, outputs, the HTTP endpoint and the memcached listener.
// It knows inputs and outputs only by their interfaces (Input, Output).
type Daemon struct {
	cfg *Config
	log *slog.Logger
	// set is the live table set, which a reload may switch to another
	// (reload_tables.go); tablesCfg is its configuration.
	set       atomic.Pointer[tables.Set]
	tablesCfg TablesConfig
	setCarry  setCarry
	// engines is the live engine (the compiled rules), which a reload
	// replaces between batches (reload.go). A worker holds batchMu for
	// reading while it processes a batch: a reload that switches the
	// table set takes it to swap the engine and the set between batches.
	engines  engines
	batchMu  sync.RWMutex
	reloadMu sync.Mutex
	// closing is set once the shutdown has begun (under reloadMu): a
	// reload is refused from then on.
	closing bool
	reloads [len(reloadResults)]atomic.Uint64
	// inputsStarted, inputsStopped and tableSwitches count what the
	// reloads changed.
	inputsStarted, inputsStopped, tableSwitches atomic.Uint64
	ops                                         *opsMetrics
	// netCounts are the networks of the .mmdb tables (metrics_tables.go).
	netCounts networkCounts

	q       *batchQueue
	freeOut chan *Buffer
	outCh   chan *Buffer
	// enriched is where the workers send their buffers: outCh, or the
	// persistent queue's input.
	enriched chan *Buffer
	queue    *diskQueue
	reopen   chan struct{}

	// inputs, the kind and the configuration of each, are the live
	// inputs, which a reload changes under inMu (reload_inputs.go).
	inMu       sync.RWMutex
	inputs     []Input
	inputKinds []*InputKind
	inCfgs     []InputConfig
	shared     shared // Env.Shared
	// outputs and outCfgs (the configuration of each) are the live
	// outputs. The output loop owns them: it reads them without outMu and
	// replaces them under it at a reload (reload_outputs.go); the others
	// read them under outMu.
	outMu    sync.RWMutex
	outputs  []Output
	outCfgs  []OutputConfig
	outHolds int // the buffers the pool keeps for the outputs' holds
	outSwap  chan *outputSwap
	outDone  chan struct{} // closed when the output loop returns

	httpLn  *listen.Listener
	httpSrv *http.Server
	api     *serve.API // the table lookup API, with tables and http.listen
	mcLn    *listen.Listener
	mc      *serve.Memcached

	eventsOut atomic.Uint64
	startedAt time.Time
	readyAt   atomic.Int64

	ready      atomic.Bool
	shutdownAt atomic.Int64 // when the graceful shutdown began (0: not yet)
	hardStop   chan struct{}
	closeOnce  sync.Once
	inClose    sync.Once // closeInputs
	// rulesWatch reports the rules a swap of the tables makes miss.
	rulesWatch ruleWatch
}

// New opens the tables, compiles the rules, makes the outputs and the
// inputs (binding every listener), so that when it returns the daemon
// only has to be Run. Listeners are bound after the tables are loaded: a
// port that accepts means the tables are there.
func New(cfg *Config, logger *slog.Logger) (d *Daemon, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	d = &Daemon{shared: shared{m: map[string]any{}}, cfg: cfg, log: logger, reopen: make(chan struct{}, 1), outSwap: make(chan *outputSwap), outDone: make(chan struct{}), hardStop: make(chan struct{}), startedAt: time.Now(), ops: newOpsMetrics()}
	partial := d // "return nil, err" clears d before the deferred call runs
	defer func() {
		if err != nil {
			partial.closeAll()
		}
	}()
	if err := CheckMemory(cfg); err != nil {
		return nil, err
	}
	d.tablesCfg = cfg.Tables
	if cfg.Tables.Path != "" {
		set, err := openTables(&cfg.Tables, logger)
		switch {
		case err != nil && tables.IsRemote(cfg.Tables.Path):
			return nil, fmt.Errorf("tables: %w", err)
		case errors.Is(err, fs.ErrNotExist):
			return nil, cfg.startError(&cfg.Tables.At, "tables", "", cfg.Tables.Path, err, "build the tables there with lut build, or change the path")
		case err != nil:
			return nil, cfg.startError(&cfg.Tables.At, "tables", "", cfg.Tables.Path, err, "")
		}
		d.set.Store(set)
		warnNoTables(set, cfg.Tables.Path, logger)
		if err := checkRuleTables(set, cfg.Rules, logger); err != nil {
			return nil, err
		}
		d.rulesWatch.watch(set, cfg.Rules, logger)
	}
	if len(cfg.Rules) == 0 && len(cfg.Inputs) > 0 {
		logger.Warn("no rules: events are written as they were received, enriched from no table (rules come from the configuration file, --config)")
	}
	rules, opts := cfg.engineRules()
	eng, err := engine.New(rules, opts, d.set.Load())
	if err != nil {
		return nil, err
	}
	d.engines.swap(eng)
	pc := cfg.Pipeline
	nb := pc.Batches
	if nb == 0 {
		nb = 4*pc.Workers + 8
	}
	d.q = newBatchQueue(nb, pc.BatchSize, pc.BatchBytes, maxMsgSize(cfg), pc.FlushInterval)
	// Outputs first: one that cannot open fails the start before any
	// listener is bound.
	nout := 2*pc.Workers + 2
	for i := range cfg.Outputs {
		oc := &cfg.Outputs[i]
		kind := outputKinds[oc.Type]
		o, err := kind.New(oc, d.env(oc.Name, string(oc.Type), "output"))
		if err != nil {
			hint := ""
			if kind.Endpoint == EndpointPath && errors.Is(err, fs.ErrNotExist) {
				hint = "its directory does not exist: create it, or change the path"
			}
			return nil, cfg.startError(&oc.At, config.Index("outputs", i), "output "+oc.Name, oc.Path, err, hint)
		}
		d.outputs = append(d.outputs, o)
		d.outCfgs = append(d.outCfgs, *oc)
		d.outHolds += holds(o)
	}
	nout += d.outHolds
	d.outCh = make(chan *Buffer, nout)
	d.enriched = d.outCh
	nwork := nout
	if cfg.Queue.Enabled() {
		// The outputs are fed from the queue, with buffers of its own:
		// the workers' are given back once appended, whatever the
		// outputs hold.
		if d.queue, err = d.openQueue(nout, 2*pc.BatchBytes); err != nil {
			return nil, fmt.Errorf("queue: %w", err)
		}
		d.enriched = d.queue.in
		nwork = 2*pc.Workers + 2
	}
	d.freeOut = make(chan *Buffer, nwork)
	for range nwork {
		b := &Buffer{pool: d.freeOut}
		b.B = make([]byte, 0, 2*pc.BatchBytes)
		d.freeOut <- b
	}
	for i := range cfg.Inputs {
		ic := &cfg.Inputs[i]
		kind := inputKinds[ic.Type]
		in, err := kind.New(ic, d.env(ic.Name, string(ic.Type), "input"))
		if err != nil {
			return nil, cfg.startError(&ic.At, config.Index("inputs", i), "input "+ic.Name, ic.Path, err, "")
		}
		d.inputs = append(d.inputs, in)
		d.inputKinds = append(d.inputKinds, kind)
		d.inCfgs = append(d.inCfgs, *ic)
	}
	if cfg.HTTP.Listen != "" {
		if d.httpLn, err = listen.Listen(cfg.HTTP.Listen, cfg.HTTP.Conn.Options("http", d.log)); err != nil {
			return nil, cfg.startError(&cfg.HTTP.At, "http", "", "", err, "")
		}
		if set := d.set.Load(); set != nil {
			hc := cfg.HTTP
			d.api = serve.NewAPI(set, serve.HTTPOptions{Token: hc.Token, Clients: hc.APIClients, Listen: hc.Listen, MaxBatchBytes: hc.MaxBodyBytes})
		}
	}
	if cfg.Memcached.Listen != "" {
		mc := cfg.Memcached
		// The listener caps per source and does the TLS handshake; the
		// server caps in all, answering as memcached does, and closes
		// idle connections. With TLS the listener caps in all too, so
		// that handshakes count (a refusal cannot be answered in
		// plaintext there). A plaintext connection the listener refuses
		// (over max_connections_per_source) is answered as the server
		// answers one over its cap.
		o := mc.Conn.Options("memcached", d.log)
		if o.TLS == nil {
			o.Limits.MaxConnections = 0
			o.OnRefuse = serve.RefuseConnection
		}
		if d.mcLn, err = listen.Listen(cfg.Memcached.Listen, o); err != nil {
			return nil, cfg.startError(&cfg.Memcached.At, "memcached", "", "", err, "")
		}
		d.mc = serve.NewMemcached(d.set.Load(), serve.MemcachedOptions{DefaultTable: mc.DefaultTable, ValueColumn: mc.ValueColumn, MaxMatches: mc.MaxMatches,
			MaxConnections: mc.Conn.Limits.MaxConnections, IdleTimeout: mc.Conn.Limits.IdleTimeout, Logger: d.log})
	}
	return d, nil
}

// env is what an input or output named name, of type typ, gets.
func (d *Daemon) env(name, typ, what string) *Env {
	return &Env{Log: d.log.With(what, name), Stop: d.hardStop, Delivery: d.cfg.Pipeline.Delivery, shared: &d.shared, q: d.q, eng: d.engines.current(), name: name, typ: typ, deadline: d.shutdownDeadline, out: &d.eventsOut}
}

// shutdownDeadline returns when the daemon's shutdown must be done:
// shutdown_timeout after it began, or from now before it has.
func (d *Daemon) shutdownDeadline() time.Time {
	if t := d.shutdownAt.Load(); t != 0 {
		return time.Unix(0, t).Add(d.cfg.ShutdownTimeout)
	}
	return time.Now().Add(d.cfg.ShutdownTimeout)
}

// warnNoTables warns when set, the tables at path loaded at the start,
// holds none: tables.path likely names the wrong directory, or the
// tables were not built yet, and every lookup misses (of the rules, the
// lookup API, the memcached listener) until some are.
func warnNoTables(set *tables.Set, path string, log *slog.Logger) {
	sn := set.Acquire()
	defer sn.Release()
	if len(sn.Names()) == 0 {
		log.Warn("tables: no table in tables.path: every lookup misses until tables are built or published there (lut build), or tables.path names the directory that holds them",
			"path", path)
	}
}

// checkRuleTables checks the rules against the tables loaded now (at
// start, at a reload): a table of the wrong kind, or whose key the
// rule's fields do not make, stops the start; a missing one is only
// logged (its lookups miss until it appears).
func checkRuleTables(set *tables.Set, rules []RuleConfig, log *slog.Logger) error {
	sn := set.Acquire()
	defer sn.Release()
	for _, r := range rules {
		lut, mm := sn.LUT(r.Table), sn.MMDB(r.Table)
		switch {
		case lut == nil && mm == nil:
			log.Warn("rule table not loaded (yet); its lookups miss until it appears", "rule", r.Name, "table", r.Table)
		case r.MMDB && lut != nil:
			return fmt.Errorf("rule %q: mmdb_fields given, but table %q is a .lut table", r.Name, r.Table)
		case !r.MMDB && mm != nil:
			return fmt.Errorf("rule %q: table %q is an .mmdb table: give mmdb_fields", r.Name, r.Table)
		case lut != nil:
			if err := checkKeyFields(&r.Rule, lut); err != nil {
				return fmt.Errorf("rule %q: %w", r.Name, err)
			}
		}
	}
	return nil
}

func maxMsgSize(cfg *Config) int {
	m := 0
	for _, in := range cfg.Inputs {
		m = max(m, in.MaxMessageSize)
	}
	return m
}

// Addr returns the bound address of the named input (or, with "", of the
// first input that listens), for listeners on port 0.
func (d *Daemon) Addr(input string) net.Addr {
	d.inMu.RLock()
	defer d.inMu.RUnlock()
	for i, in := range d.inputs {
		if a := in.Addr(); a != nil && (input == "" || d.inCfgs[i].Name == input) {
			return a
		}
	}
	return nil
}

// HTTPAddr returns the bound address of the HTTP endpoint, or nil.
func (d *Daemon) HTTPAddr() net.Addr {
	if d.httpLn == nil {
		return nil
	}
	return d.httpLn.Addr()
}

// MemcachedAddr returns the bound address of the memcached listener, or
// nil.
func (d *Daemon) MemcachedAddr() net.Addr {
	if d.mcLn == nil {
		return nil
	}
	return d.mcLn.Addr()
}

// Set returns the live table set (nil without tables).
func (d *Daemon) Set() *tables.Set { return d.set.Load() }

// newHTTPServer is the HTTP server of h, with the configuration's bounds.
func (d *Daemon) newHTTPServer(h http.Handler) *http.Server {
	hc := d.cfg.HTTP
	idle := hc.Conn.Limits.IdleTimeout
	if idle == 0 {
		// idle_timeout 0 is "never"; net/http would take a zero
		// IdleTimeout as ReadTimeout (request_timeout).
		idle = -1
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: hc.ReadHeaderTimeout,
		ReadTimeout:       hc.RequestTimeout,
		WriteTimeout:      hc.RequestTimeout,
		IdleTimeout:       idle,
		ConnState:         serve.CloseSilent(hc.Conn.Limits.IdleTimeout),
		MaxHeaderBytes:    hc.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	}
}

// Reopen asks the file outputs to reopen their files (log rotation), and
// the listeners to read their TLS certificate files again.
func (d *Daemon) Reopen() {
	for _, ln := range []*listen.Listener{d.httpLn, d.mcLn} {
		if ln != nil {
			ln.Reload()
		}
	}
	d.inMu.RLock()
	for _, in := range d.inputs {
		if r, ok := in.(interface{ Reload() }); ok {
			r.Reload()
		}
	}
	d.inMu.RUnlock()
	select {
	case d.reopen <- struct{}{}:
	default:
	}
}

// Ready reports whether the daemon serves (tables loaded, inputs open,
// not shutting down, the persistent queue neither full nor failing to
// write).
func (d *Daemon) Ready() bool { return d.ready.Load() && !d.queueFull() && !d.queueFailing() }

// queueFull says whether the persistent queue is full.
func (d *Daemon) queueFull() bool { return d.queue != nil && d.queue.full.Load() }

// queueFailing says whether the persistent queue's writes fail.
func (d *Daemon) queueFailing() bool { return d.queue != nil && d.queue.failing.Load() }

// finite reports whether every input ends by itself (and there is one).
func (d *Daemon) finite() bool {
	d.inMu.RLock()
	defer d.inMu.RUnlock()
	for _, k := range d.inputKinds {
		if !k.Finite {
			return false
		}
	}
	return len(d.inputKinds) > 0
}

// Run serves until ctx is cancelled (or, when every input ends by itself,
// until they all have), then shuts down gracefully: the inputs stop
// accepting and read for DrainReadGrace more what was already sent, and
// every accepted event is processed and written before Run returns. If
// that takes longer than ShutdownTimeout, Run returns an error and the
// rest is abandoned.
func (d *Daemon) Run(ctx context.Context) error {
	var workWG, outWG sync.WaitGroup
	workDone := make(chan struct{})
	outWG.Add(1)
	go d.outputLoop(&outWG)
	if d.queue != nil {
		d.queue.start()
	}
	for range d.cfg.Pipeline.Workers {
		workWG.Add(1)
		go d.workerLoop(&workWG, workDone)
	}
	if d.httpLn != nil {
		h := d.httpHandler()
		if d.api != nil {
			if d.api.Disabled() {
				d.log.Warn("the table lookup API (/v1/) is refused: http.listen is not a loopback address and neither http.token nor http.api_clients is set")
			}
			h = d.api.Handler(h)
		}
		d.httpSrv = d.newHTTPServer(d.ops.instrument(h))
		go func() {
			if err := d.httpSrv.Serve(d.httpLn); !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http: the endpoint stopped serving", "err", err)
			}
		}()
	}
	if d.mc != nil {
		go func() {
			if err := d.mc.Serve(d.mcLn); err != nil && !errors.Is(err, net.ErrClosed) {
				d.log.Error("memcached: the listener stopped serving", "err", err)
			}
		}()
	}
	d.inMu.RLock()
	for _, in := range d.inputs {
		in.Start()
	}
	// Only a finite daemon waits for this: its inputs cannot change at a
	// reload.
	inputsDone := allDone(d.inputs)
	d.inMu.RUnlock()
	d.ready.Store(true)
	d.readyAt.Store(time.Now().UnixNano())
	d.log.Info("enrichd ready", "startup_seconds", seconds(time.Since(d.startedAt)), "workers", d.cfg.Pipeline.Workers,
		"inputs", len(d.cfg.Inputs), "rules", len(d.cfg.Rules), "outputs", len(d.cfg.Outputs))

	if d.finite() {
		select {
		case <-ctx.Done():
		case <-inputsDone:
		}
	} else {
		<-ctx.Done()
	}

	// Graceful shutdown.
	d.ready.Store(false)
	if delay := d.cfg.Shutdown.DrainDelay; delay > 0 && ctx.Err() != nil {
		// Not ready, still serving: until load balancers have seen it.
		d.log.Info("shutting down: /readyz answers 503 for drain_delay while events still flow", "drain_delay_seconds", seconds(delay))
		time.Sleep(delay)
	}
	start := time.Now()
	d.shutdownAt.Store(start.UnixNano())
	d.log.Info("shutting down: draining inputs")
	timeout := time.NewTimer(d.cfg.ShutdownTimeout)
	defer timeout.Stop()
	// A reload under way ends first; none starts after.
	d.reloadMu.Lock()
	d.closing = true
	d.reloadMu.Unlock()
	deadline := time.Now().Add(d.cfg.DrainReadGrace)
	d.inMu.RLock()
	for _, in := range d.inputs {
		in.Stop(deadline)
	}
	inputsDone = allDone(d.inputs)
	d.inMu.RUnlock()
	wait := func(done <-chan struct{}) bool {
		select {
		case <-done:
			return true
		case <-timeout.C:
			return false
		}
	}
	ok := wait(inputsDone)
	if ok {
		close(workDone)
		if ok = waitGroup(&workWG, wait); ok {
			close(d.enriched) // with the queue, its reader closes outCh once it is read
			ok = waitGroup(&outWG, wait)
		}
	}
	if d.mc != nil {
		d.mc.Close()
	}
	if d.httpSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := d.httpSrv.Shutdown(sctx); err != nil {
			d.log.Warn("http: requests still open at shutdown", "err", err)
		}
		cancel()
	}
	if !ok {
		close(d.hardStop)
		if d.queue != nil {
			d.log.Error("shutdown timed out; the events in the persistent queue stay there and are replayed at the next start, those not in it yet are abandoned",
				"queued_batches", len(d.q.work), "queued_outputs", len(d.queue.in))
		} else {
			d.log.Error("shutdown timed out; abandoning queued events", "queued_batches", len(d.q.work), "queued_outputs", len(d.outCh))
		}
		// The inputs and listeners close all the same: a Kafka input
		// commits what was delivered and leaves its group, so that its
		// partitions move at once, and the ports are free. The outputs
		// and the tables stay: a worker or an output may still use them.
		// The persistent queue is closed once its writer and reader
		// have stopped, so that its directory is free too.
		closed := make(chan struct{})
		go func() { d.closeInputs(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(closeInputsGrace):
			d.log.Error("closing the inputs after the shutdown timeout takes too long; leaving them", "waited_seconds", seconds(closeInputsGrace))
		}
		if d.queue != nil {
			d.queue.abandon(closeInputsGrace)
		}
		return errors.New("shutdown timed out before every event was written")
	}
	d.closeAll()
	d.log.Info("shut down", "took_seconds", seconds(time.Since(start)), "events_out", d.eventsOut.Load())
	return nil
}

// allDone returns a channel closed once every input of ins is Done.
func allDone(ins []Input) <-chan struct{} {
	ins = append([]Input(nil), ins...)
	ch := make(chan struct{})
	go func() {
		for _, in := range ins {
			<-in.Done()
		}
		close(ch)
	}()
	return ch
}

// waitGroup waits for wg with wait (which gives up at the shutdown
// timeout).
func waitGroup(wg *sync.WaitGroup, wait func(<-chan struct{}) bool) bool {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return wait(ch)
}

// closeAll closes the outputs (which deliver what they hold), then the
// inputs (a Kafka input commits what the outputs delivered), the
// listeners and the tables.
func (d *Daemon) closeAll() {
	d.closeOnce.Do(func() {
		d.outMu.RLock()
		for i, o := range d.outputs {
			if err := o.Close(); err != nil {
				d.log.Error("closing output", "output", d.outCfgs[i].Name, "err", err)
			}
		}
		d.outMu.RUnlock()
		if d.queue != nil {
			d.queue.close()
		}
		d.closeInputs()
		if set := d.set.Load(); set != nil {
			set.Close()
		}
	})
}

// closeInputsGrace bounds how long a shutdown that timed out waits for
// the inputs to close.
const closeInputsGrace = 10 * time.Second

// closeInputs closes the inputs (a Kafka input commits what the outputs
// delivered and leaves its group) and the listeners, once.
func (d *Daemon) closeInputs() {
	d.inClose.Do(func() {
		d.inMu.RLock()
		for _, in := range d.inputs {
			in.Close()
		}
		d.inMu.RUnlock()
		if d.httpLn != nil {
			d.httpLn.Close()
		}
		if d.mcLn != nil {
			d.mcLn.Close()
		}
	})
}

// workerLoop processes batches until workDone is closed and the queue is
// empty.
func (d *Daemon) workerLoop(wg *sync.WaitGroup, workDone <-chan struct{}) {
	defer wg.Done()
	eng := d.engines.current()
	w := eng.NewWorker(d.cfg.Pipeline.BatchSize)
	for {
		var b *batch
		select {
		case b = <-d.q.work:
		case <-workDone:
			select {
			case b = <-d.q.work:
			default:
				return
			}
		}
		ob := <-d.freeOut
		d.batchMu.RLock()
		if e := d.engines.current(); e != eng {
			// The rules were reloaded: from this batch on, the new ones.
			eng, w = e, e.NewWorker(d.cfg.Pipeline.BatchSize)
		}
		n := len(b.Msgs)
		w.Process(&b.Batch, &ob.Lines, time.Now())
		d.batchMu.RUnlock()
		if b.in != nil && b.Malformed|b.Truncated != 0 {
			b.in.Malformed.Add(b.Malformed)
			b.in.Truncated.Add(b.Truncated)
		}
		ob.Events, ob.ack, ob.received, ob.in = n, b.ack, b.start, b.in
		d.q.recycle(b)
		d.enriched <- ob
	}
}

// outputLoop hands every buffer to every output, flushing them when no
// buffer waits. A buffer counts in events_out once each output has
// delivered it (see Output). An output that fails is retried before the
// loop takes another buffer (retryOutput).
func (d *Daemon) outputLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(d.outDone)
	flush := func() bool {
		for i, o := range d.outputs {
			if err := o.Flush(); err != nil && !d.retryOutput(i, err) {
				return false
			}
		}
		return true
	}
	for {
		select {
		case ob, ok := <-d.outCh:
			if !ok {
				flush()
				return
			}
			ob.t = track(len(d.outputs), ob.Events, ob.ack, ob.in, &d.eventsOut)
			ob.refs.Store(1)
			for i, o := range d.outputs {
				if err := o.Write(ob); err != nil && !d.retryOutput(i, err) {
					ob.Release()
					return
				}
			}
			recv := ob.received
			ob.Release()
			if len(d.outCh) == 0 && !flush() {
				return
			}
			d.ops.observeLatency(recv)
		case <-d.reopen:
			d.reopenOutputs()
		case sw := <-d.outSwap:
			sw.done <- d.swapOutputs(sw)
		}
	}
}

// Output retries wait between outputRetryMin and outputRetryMax; a
// failing output is logged at most every outputLogEvery.
const (
	outputRetryMin = 50 * time.Millisecond
	outputRetryMax = 2 * time.Second
	outputLogEvery = 10 * time.Second
)

// retryOutput handles err from output i: it logs and counts it, then
// flushes the output again after a backoff until that succeeds (true), or
// the daemon gives up (false, at shutdown_timeout). The output keeps what
// it could not deliver meanwhile (see Output), and no other buffer is
// taken: the queues before it fill.
func (d *Daemon) retryOutput(i int, err error) bool {
	o := d.outputs[i]
	st := o.Stats()
	name := d.outCfgs[i].Name
	began := time.Now()
	var logged time.Time
	failures := 0
	for attempt := 0; ; attempt++ {
		reason := st.failed(err)
		failures++
		if time.Since(logged) >= outputLogEvery {
			d.log.Error("output failed; retrying, the events stay queued", "output", name, "type", st.Type,
				"reason", reason, "err", err, "failures", failures, "failing_for", time.Since(began))
			logged = time.Now()
		}
		wait := time.NewTimer(retry.Backoff(outputRetryMin, outputRetryMax, attempt))
		select {
		case <-d.hardStop:
			wait.Stop()
			if d.queue != nil {
				d.log.Error("output failed and the daemon gave up on it; its undelivered events stay in the persistent queue and are replayed at the next start", "output", name, "err", err)
			} else {
				d.log.Error("output failed and the daemon gave up on it; its undelivered events are lost", "output", name, "err", err)
			}
			return false
		case <-d.reopen:
			wait.Stop()
			d.reopenOutputs()
		case <-wait.C:
		}
		if err = o.Flush(); err == nil {
			d.log.Info("output works again", "output", name, "failures", failures, "failed_for", time.Since(began))
			return true
		}
	}
}

// reopenOutputs reopens the outputs' files (SIGHUP).
func (d *Daemon) reopenOutputs() {
	for i, o := range d.outputs {
		if r, ok := o.(reopener); ok {
			if err := r.Reopen(); err != nil {
				d.log.Error("reopening output failed", "output", d.outCfgs[i].Name, "err", err)
			}
		}
	}
	d.log.Info("outputs reopened")
}
