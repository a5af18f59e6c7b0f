package enrichd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/serve"
	"github.com/lutkit/lutkit/tables"
)

// Daemon is a running enrichd: inputs, workers, outputs and the HTTP
// endpoint, built from a Config.
type Daemon struct {
	cfg  *Config
	log  *slog.Logger
	set  *tables.Set
	pipe *Pipeline

	freeBatches chan *batch
	work        chan *batch
	freeOut     chan *outBuf
	outCh       chan *outBuf
	reopen      chan struct{}

	tcpIns   []*tcpInput
	udpIns   []*udpInput
	fileIns  []*fileInput
	kafkaIns []*kafkaInput
	inStats  []*inputStats
	sinks    []sink       // stream outputs, written by the output loop
	kafkaOut []*kafkaSink // outputs that take whole buffers (Send)

	httpLn  net.Listener
	httpSrv *http.Server
	mcLn    net.Listener
	mc      *serve.Memcached

	eventsOut    atomic.Uint64
	outputErrors atomic.Uint64
	startedAt    time.Time
	readyAt      atomic.Int64

	ready     atomic.Bool
	stopping  atomic.Bool
	drainTill atomic.Int64
	hardStop  chan struct{}
	closeOnce sync.Once
}

// New opens the tables, compiles the rules, opens the outputs and binds
// every listener, so that when it returns the daemon only has to be Run.
// Listeners are bound after the tables are loaded: a port that accepts
// means the tables are there.
func New(cfg *Config, logger *slog.Logger) (d *Daemon, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	d = &Daemon{cfg: cfg, log: logger, reopen: make(chan struct{}, 1), hardStop: make(chan struct{}), startedAt: time.Now()}
	partial := d // "return nil, err" clears d before the deferred call runs
	defer func() {
		if err != nil {
			partial.closeAll()
		}
	}()
	if cfg.Tables.Path != "" {
		opts := tables.Options{PollInterval: cfg.Tables.PollInterval, NoNotify: cfg.Tables.NoNotify, Logger: logger}
		switch cfg.Tables.Verify {
		case "digest":
			opts.DataVerify = tables.DataVerifyDigest
		case "none":
			opts.DataVerify = tables.DataVerifyNone
		}
		if d.set, err = tables.Open(cfg.Tables.Path, opts); err != nil {
			return nil, fmt.Errorf("tables: %w", err)
		}
		sn := d.set.Acquire()
		for _, r := range cfg.Rules {
			if sn.LUT(r.Table) == nil && sn.MMDB(r.Table) == nil {
				logger.Warn("rule table not loaded (yet); its lookups miss until it appears", "rule", r.Name, "table", r.Table)
			} else if r.MMDB != (sn.MMDB(r.Table) != nil) {
				sn.Release()
				if r.MMDB {
					return nil, fmt.Errorf("rule %q: mmdb_fields given, but table %q is a .lut table", r.Name, r.Table)
				}
				return nil, fmt.Errorf("rule %q: table %q is an .mmdb table: give mmdb_fields", r.Name, r.Table)
			}
		}
		sn.Release()
	}
	if d.pipe, err = NewPipeline(cfg, d.set); err != nil {
		return nil, err
	}
	pc := cfg.Pipeline
	nb := pc.Batches
	if nb == 0 {
		nb = 4*pc.Workers + 8
	}
	d.freeBatches = make(chan *batch, nb)
	d.work = make(chan *batch, nb)
	for range nb {
		d.freeBatches <- &batch{buf: make([]byte, 0, pc.BatchBytes+maxMsgSize(cfg)), msgs: make([]msgRef, 0, pc.BatchSize)}
	}
	no := 2*pc.Workers + 2
	for _, o := range cfg.Outputs {
		if o.Type == "kafka" {
			// Buffers wait in a Kafka output until the brokers have them.
			no += o.Kafka.InFlight + 1
		}
	}
	d.freeOut = make(chan *outBuf, no)
	d.outCh = make(chan *outBuf, no)
	for range no {
		d.freeOut <- &outBuf{b: make([]byte, 0, 2*pc.BatchBytes)}
	}
	for _, o := range cfg.Outputs {
		if o.Type == "kafka" {
			k, err := newKafkaSink(o, d, &outputStats{name: o.Name, typ: o.Type})
			if err != nil {
				return nil, fmt.Errorf("output %s: %w", o.Name, err)
			}
			d.kafkaOut = append(d.kafkaOut, k)
			continue
		}
		s, err := newSink(o, d)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		d.sinks = append(d.sinks, s)
	}
	for _, ic := range cfg.Inputs {
		st := &inputStats{name: ic.Name, typ: ic.Type}
		d.inStats = append(d.inStats, st)
		switch ic.Type {
		case "tcp":
			ln, err := net.Listen("tcp", ic.Listen)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", ic.Name, err)
			}
			d.tcpIns = append(d.tcpIns, &tcpInput{d: d, cfg: ic, ln: ln, stats: st, fmt: formatCode(ic.Format), conns: map[net.Conn]struct{}{}})
		case "udp":
			ua, err := net.ResolveUDPAddr("udp", ic.Listen)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", ic.Name, err)
			}
			c, err := net.ListenUDP("udp", ua)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", ic.Name, err)
			}
			rb := ic.ReadBuffer
			if rb == 0 {
				rb = 8 << 20
			}
			c.SetReadBuffer(rb)
			d.udpIns = append(d.udpIns, &udpInput{d: d, cfg: ic, conn: c, stats: st, fmt: formatCode(ic.Format)})
		case "file":
			r, err := openFileInput(ic.Path)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", ic.Name, err)
			}
			d.fileIns = append(d.fileIns, &fileInput{d: d, cfg: ic, stats: st, fmt: formatCode(ic.Format), r: r})
		case "kafka":
			k, err := newKafkaInput(d, ic, st)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", ic.Name, err)
			}
			d.kafkaIns = append(d.kafkaIns, k)
		}
	}
	if cfg.HTTP.Listen != "" {
		if d.httpLn, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
	}
	if cfg.Memcached.Listen != "" {
		if d.mcLn, err = net.Listen("tcp", cfg.Memcached.Listen); err != nil {
			return nil, fmt.Errorf("memcached: %w", err)
		}
		mc := cfg.Memcached
		d.mc = serve.NewMemcached(d.set, serve.MemcachedOptions{DefaultTable: mc.DefaultTable, ValueColumn: mc.ValueColumn,
			MaxConnections: mc.MaxConnections, IdleTimeout: mc.IdleTimeout, Logger: d.log})
	}
	return d, nil
}

func maxMsgSize(cfg *Config) int {
	m := 0
	for _, in := range cfg.Inputs {
		m = max(m, in.MaxMessageSize)
	}
	return m
}

// Addr returns the bound address of the named input (or, with "", the
// first TCP input), for listeners on port 0.
func (d *Daemon) Addr(input string) net.Addr {
	for _, t := range d.tcpIns {
		if input == "" || t.cfg.Name == input {
			return t.ln.Addr()
		}
	}
	for _, u := range d.udpIns {
		if input == "" || u.cfg.Name == input {
			return u.conn.LocalAddr()
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
func (d *Daemon) Set() *tables.Set { return d.set }

// Reopen asks the file outputs to reopen their files (log rotation).
func (d *Daemon) Reopen() {
	select {
	case d.reopen <- struct{}{}:
	default:
	}
}

func (d *Daemon) isStopping() bool { return d.stopping.Load() }

func (d *Daemon) drainDeadline() time.Time { return time.Unix(0, d.drainTill.Load()) }

// Ready reports whether the daemon serves (tables loaded, inputs open,
// not shutting down).
func (d *Daemon) Ready() bool { return d.ready.Load() }

// Run serves until ctx is cancelled (or, when every input is a file, until
// they are all read), then shuts down gracefully: the listeners close, the
// connections are read for DrainReadGrace more, and every accepted event
// is processed and written before Run returns. If that takes longer than
// ShutdownTimeout, Run returns an error and the rest is abandoned.
func (d *Daemon) Run(ctx context.Context) error {
	var inWG, fileWG, workWG, outWG sync.WaitGroup
	workDone := make(chan struct{})
	outWG.Add(1)
	go d.outputLoop(&outWG)
	for range d.cfg.Pipeline.Workers {
		workWG.Add(1)
		go d.workerLoop(&workWG, workDone)
	}
	if d.httpLn != nil {
		h := d.httpHandler()
		if d.set != nil {
			api := serve.NewAPI(d.set, serve.HTTPOptions{Token: d.cfg.HTTP.Token, Listen: d.cfg.HTTP.Listen})
			if api.Disabled() {
				d.log.Warn("the table lookup API (/v1/) is refused: http.listen is not a loopback address and no http.token is set")
			}
			h = api.Handler(h)
		}
		d.httpSrv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go d.httpSrv.Serve(d.httpLn)
	}
	if d.mc != nil {
		go d.mc.Serve(d.mcLn)
	}
	for _, t := range d.tcpIns {
		inWG.Add(1)
		go t.serve(&inWG)
	}
	for _, u := range d.udpIns {
		inWG.Add(1)
		go u.serve(&inWG)
	}
	for _, k := range d.kafkaIns {
		inWG.Add(1)
		go k.serve(&inWG)
	}
	filesDone := make(chan struct{})
	for _, f := range d.fileIns {
		fileWG.Add(1)
		go f.serve(&fileWG)
	}
	go func() { fileWG.Wait(); close(filesDone) }()
	d.ready.Store(true)
	d.readyAt.Store(time.Now().UnixNano())
	d.log.Info("enrichd ready", "startup", time.Since(d.startedAt).String(), "workers", d.cfg.Pipeline.Workers,
		"inputs", len(d.cfg.Inputs), "rules", len(d.cfg.Rules), "outputs", len(d.cfg.Outputs))

	onlyFiles := len(d.tcpIns) == 0 && len(d.udpIns) == 0 && len(d.kafkaIns) == 0 && len(d.fileIns) > 0
	if onlyFiles {
		select {
		case <-ctx.Done():
		case <-filesDone:
		}
	} else {
		<-ctx.Done()
	}

	// Graceful shutdown.
	start := time.Now()
	d.ready.Store(false)
	d.drainTill.Store(time.Now().Add(d.cfg.DrainReadGrace).UnixNano())
	d.stopping.Store(true)
	d.log.Info("shutting down: draining inputs")
	timeout := time.NewTimer(d.cfg.ShutdownTimeout)
	defer timeout.Stop()
	for _, t := range d.tcpIns {
		t.stop(d.drainDeadline())
	}
	for _, u := range d.udpIns {
		u.conn.SetReadDeadline(d.drainDeadline())
	}
	for _, k := range d.kafkaIns {
		k.stop()
	}
	wait := func(wg *sync.WaitGroup) bool {
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
			return true
		case <-timeout.C:
			return false
		}
	}
	ok := wait(&inWG)
	if ok {
		// File inputs stop between lines; one blocked reading a pipe that
		// never ends (stdin) is abandoned after the read grace.
		select {
		case <-filesDone:
		case <-time.After(d.cfg.DrainReadGrace):
			d.log.Warn("a file input did not stop in time; abandoning it")
		}
		close(workDone)
		if ok = wait(&workWG); ok {
			close(d.outCh)
			ok = wait(&outWG)
		}
	}
	for _, u := range d.udpIns {
		u.conn.Close()
	}
	if d.mc != nil {
		d.mc.Close()
	}
	if d.httpSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		d.httpSrv.Shutdown(sctx)
		cancel()
	}
	if !ok {
		close(d.hardStop)
		d.log.Error("shutdown timed out; abandoning queued events", "queued_batches", len(d.work), "queued_outputs", len(d.outCh))
		return errors.New("shutdown timed out before every event was written")
	}
	d.closeAll()
	d.log.Info("shut down", "took", time.Since(start).String(), "events_out", d.eventsOut.Load())
	return nil
}

func (d *Daemon) closeAll() {
	d.closeOnce.Do(func() {
		for _, s := range d.sinks {
			if err := s.Close(); err != nil {
				d.log.Error("closing output", "output", s.Stats().name, "err", err)
			}
		}
		// Kafka outputs wait for their buffers in flight; then what they
		// delivered is committed.
		for _, k := range d.kafkaOut {
			if err := k.Close(); err != nil {
				d.log.Error("closing output", "output", k.Stats().name, "err", err)
			}
		}
		for _, k := range d.kafkaIns {
			k.finish()
		}
		for _, t := range d.tcpIns {
			t.ln.Close()
		}
		for _, u := range d.udpIns {
			u.conn.Close()
		}
		if d.httpLn != nil {
			d.httpLn.Close()
		}
		if d.mcLn != nil {
			d.mcLn.Close()
		}
		if d.set != nil {
			d.set.Close()
		}
	})
}

// workerLoop processes batches until workDone is closed and the queue is
// empty.
func (d *Daemon) workerLoop(wg *sync.WaitGroup, workDone <-chan struct{}) {
	defer wg.Done()
	w := d.pipe.newWorker(d.cfg.Pipeline.BatchSize)
	for {
		var b *batch
		select {
		case b = <-d.work:
		case <-workDone:
			select {
			case b = <-d.work:
			default:
				return
			}
		}
		ob := <-d.freeOut
		n := len(b.msgs)
		if d.pipe.perEvent {
			w.ob = ob
		}
		ob.b = w.process(b, ob.b[:0], time.Now())
		w.ob = nil
		ob.events = n
		ob.ack = b.ack
		b.reset()
		d.freeBatches <- b
		d.outCh <- ob
	}
}

// outputLoop writes every output buffer to every stream output, flushing
// when the queue is empty, and hands it to every Kafka output. A Kafka
// input's batch is acknowledged once the stream outputs have flushed it
// and each Kafka output has produced it.
func (d *Daemon) outputLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	var acks []*ackEntry // waiting for the stream outputs' flush
	// An input batch that a stream output failed to write is never
	// acknowledged: its Kafka offsets stay uncommitted, and the group reads
	// it again after a restart.
	unacked := func(n int) {
		d.log.Error("a stream output failed: the Kafka offsets of these events will not be committed", "batches", n)
	}
	flush := func() {
		ok := true
		for _, s := range d.sinks {
			if s.Flush() != nil {
				d.outputErrors.Add(1)
				ok = false
			}
		}
		if !ok && len(acks) > 0 {
			unacked(len(acks))
		}
		for _, a := range acks {
			if ok {
				a.release()
			}
		}
		clear(acks)
		acks = acks[:0]
	}
	for {
		select {
		case ob, ok := <-d.outCh:
			if !ok {
				flush()
				return
			}
			a := ob.ack
			if a != nil {
				a.pending.Store(int32(len(d.kafkaOut) + 1))
			}
			ob.refs.Store(int32(len(d.kafkaOut) + 1))
			written := true
			for _, s := range d.sinks {
				if err := s.Write(ob.b); err != nil {
					d.outputErrors.Add(1)
					written = false
				}
			}
			d.eventsOut.Add(uint64(ob.events))
			for _, k := range d.kafkaOut {
				k.Send(ob)
			}
			switch {
			case a == nil:
			case !written:
				unacked(1)
			case len(d.sinks) == 0:
				a.release()
			default:
				acks = append(acks, a)
			}
			d.releaseOut(ob)
			if len(d.outCh) == 0 {
				flush()
			}
		case <-d.reopen:
			for _, s := range d.sinks {
				if err := s.Reopen(); err != nil {
					d.log.Error("reopening output failed", "output", s.Stats().name, "err", err)
				}
			}
			d.log.Info("outputs reopened")
		}
	}
}

// releaseOut drops one holder of ob; the last returns it to the pool.
func (d *Daemon) releaseOut(ob *outBuf) {
	if ob.refs.Add(-1) > 0 {
		return
	}
	ob.b = ob.b[:0]
	ob.ends = ob.ends[:0]
	ob.vals = ob.vals[:0]
	ob.spans = ob.spans[:0]
	ob.ack = nil
	d.freeOut <- ob
}
