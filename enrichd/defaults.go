package enrichd

import (
	"runtime"
	"time"

	"github.com/lutkit/lutkit/enrichd/serve"
)

// Defaults. setDefaults is the one place that applies them: to a file's
// configuration after it is read, and to one made from flags or code.
const (
	DefaultMaxMessageSize = 64 << 10
	DefaultMaxConnections = 4096
	DefaultBatchSize      = 512
	DefaultBatchBytes     = 256 << 10
	DefaultFlushInterval  = 5 * time.Millisecond
	DefaultOutputBuffer   = 1 << 20
	DefaultUDPReadBuffer  = 8 << 20

	// The HTTP server's bounds: connections open at once, a request's
	// headers read within DefaultHTTPReadHeaderTimeout, a whole request
	// read and answered within DefaultHTTPRequestTimeout, an idle
	// keep-alive connection closed after DefaultHTTPIdleTimeout.
	DefaultHTTPMaxConnections    = 1024
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
	DefaultHTTPRequestTimeout    = time.Minute
	DefaultHTTPIdleTimeout       = 2 * time.Minute
	DefaultHTTPMaxHeaderBytes    = 16 << 10

	DefaultShutdownTimeout = 30 * time.Second
	DefaultDrainReadGrace  = 500 * time.Millisecond
)

// newConfig is an empty configuration with the one default a zero value
// cannot stand for: structured data is written unless turned off.
func newConfig() *Config {
	return &Config{Pipeline: PipelineConfig{StructuredData: true}}
}

// DefaultConfig returns a configuration with every default set and no
// inputs, rules or outputs.
func DefaultConfig() *Config {
	cfg := newConfig()
	cfg.setDefaults()
	return cfg
}

// setDefaults fills every setting that is not set with its default. It
// leaves alone what was given, even when it is wrong: validation reports
// that.
func (cfg *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if cfg.Tables.Verify == "" {
		cfg.Tables.Verify = VerifyDigest
	}
	p := &cfg.Pipeline
	def(&p.BatchSize, DefaultBatchSize)
	def(&p.BatchBytes, DefaultBatchBytes)
	if p.FlushInterval == 0 {
		p.FlushInterval = DefaultFlushInterval
	}
	if p.Delivery == "" {
		p.Delivery = AtLeastOnce
	}
	if p.KVFields == "" {
		p.KVFields = KVUsed
	}
	if p.Workers == 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	if q := &cfg.Queue; q.Enabled() && q.Sync == (QueueSync{}) {
		q.Sync.Interval = DefaultQueueSyncInterval
	}
	h := &cfg.HTTP
	if h.Conn.Limits.IdleTimeout == 0 && !h.Conn.Limits.At.Given("idle_timeout") {
		h.Conn.Limits.IdleTimeout = DefaultHTTPIdleTimeout
	}
	h.Conn.SetDefaults(DefaultHTTPMaxConnections)
	// A timeout given as 0 stays 0: validation refuses it.
	if h.ReadHeaderTimeout == 0 && !h.At.Given("read_header_timeout") {
		h.ReadHeaderTimeout = DefaultHTTPReadHeaderTimeout
	}
	if h.RequestTimeout == 0 && !h.At.Given("request_timeout") {
		h.RequestTimeout = DefaultHTTPRequestTimeout
	}
	def(&h.MaxHeaderBytes, DefaultHTTPMaxHeaderBytes)
	def(&h.MaxBodyBytes, serve.DefaultMaxBatchBytes)
	cfg.Memcached.Conn.SetDefaults(serve.DefaultMemcachedMaxConnections)
	if cfg.Log.Level == "" {
		cfg.Log.Level = "info"
	}
	if cfg.Log.Format == "" {
		cfg.Log.Format = "json"
	}
	if cfg.ShutdownTimeout == 0 && !cfg.At.Given("shutdown_timeout") {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.DrainReadGrace == 0 && !cfg.At.Given("drain_read_grace") {
		cfg.DrainReadGrace = DefaultDrainReadGrace
	}
	for i := range cfg.Inputs {
		in := &cfg.Inputs[i]
		kind := inputKinds[in.Type]
		if kind == nil {
			continue
		}
		def(&in.MaxMessageSize, DefaultMaxMessageSize)
		if in.Format == "" {
			in.Format = kind.Format
		}
		if in.Settings == nil && kind.Settings != nil {
			in.Settings = kind.Settings()
		}
		if in.Settings != nil {
			in.Settings.SetDefaults()
		}
		if in.Name == "" {
			in.Name = string(in.Type) + ":" + in.Listen + in.Path
			if n, ok := in.Settings.(interface{ NamePart() string }); ok {
				in.Name += n.NamePart()
			}
		}
	}
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		if r.Name == "" {
			r.Name = r.Table
		}
		if r.Target == "" {
			r.Target = r.Name
		}
	}
	for i := range cfg.Outputs {
		o := &cfg.Outputs[i]
		kind := outputKinds[o.Type]
		if kind == nil {
			continue
		}
		def(&o.BufferSize, DefaultOutputBuffer)
		if o.Settings == nil && kind.Settings != nil {
			o.Settings = kind.Settings()
		}
		if o.Settings != nil {
			o.Settings.SetDefaults()
		}
		if o.Name == "" {
			o.Name = string(o.Type) + ":" + o.Path + o.Address
			if n, ok := o.Settings.(interface{ NamePart() string }); ok {
				o.Name += n.NamePart()
			}
		}
	}
}
