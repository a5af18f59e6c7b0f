package enrichd

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/enrichd/internal/listen"
	"github.com/lutkit/lutkit/enrichd/serve"
	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/tables"
)

// Config is an enrichd configuration: what ParseConfig reads from
// enrichd.yaml, or what a program (cmd/enrichd's flags) fills in. Each
// section checks itself (Validate); the defaults are applied in one place
// (defaults.go).
type Config struct {
	At        config.At
	File      string // the file it was read from ("" when none)
	Inputs    []InputConfig
	Tables    TablesConfig
	Rules     []RuleConfig
	Outputs   []OutputConfig
	Pipeline  PipelineConfig
	HTTP      HTTPConfig
	Memcached MemcachedConfig
	Log       LogConfig
	// ShutdownTimeout bounds the drain on SIGTERM; what is left after it
	// is abandoned (and logged with its count).
	ShutdownTimeout time.Duration
	// DrainReadGrace is how long, on shutdown, connections keep being read
	// so that events already sent (in socket buffers) are accepted.
	DrainReadGrace time.Duration
	Shutdown       ShutdownConfig
	// Queue is the optional persistent queue (config_queue.go).
	Queue QueueConfig
}

// Verify is how much of a table file is checked before it goes live.
type Verify string

// Verification levels.
const (
	VerifyFull   Verify = "full"
	VerifyDigest Verify = "digest"
	VerifyNone   Verify = "none"
)

// Validate checks the value.
func (v Verify) Validate() error { return config.OneOf(v, VerifyFull, VerifyDigest, VerifyNone) }

// TablesConfig says where the live table set comes from.
type TablesConfig struct {
	At           config.At
	Path         string        // directory, manifest, or remote manifest (http://, https://, s3://)
	Verify       Verify        // full, digest or none
	PollInterval time.Duration // 0: default
	NoNotify     bool

	// A remote manifest's settings (see tables.RemoteOptions).
	CacheDir        string
	KeepVersions    int
	MaxArtifactSize int
	Timeout         time.Duration
	Retries         int
	Token           string
	TokenFile       string
	Headers         []config.Pair
	CAFile          string
	CertFile        string
	KeyFile         string
	S3Endpoint      string
	S3PathStyle     bool
	S3Region        string
}

// remoteKeys are the tables settings that apply to a remote manifest
// only.
var remoteKeys = []string{"cache_dir", "keep_versions", "max_artifact_size", "timeout", "retries", "token", "token_file",
	"headers", "ca_file", "cert_file", "key_file", "s3_endpoint", "s3_path_style", "s3_region"}

// RemoteOptions are the options of a remote table set.
func (t *TablesConfig) RemoteOptions() tables.RemoteOptions {
	o := tables.RemoteOptions{
		CacheDir: t.CacheDir, Keep: t.KeepVersions, MaxArtifactSize: int64(t.MaxArtifactSize), Timeout: t.Timeout,
		Retries: t.Retries, Token: t.Token, TokenFile: t.TokenFile, CAFile: t.CAFile, CertFile: t.CertFile,
		KeyFile: t.KeyFile, S3Endpoint: t.S3Endpoint, S3PathStyle: t.S3PathStyle, S3Region: t.S3Region,
	}
	if t.Retries == 0 && t.At.Given("retries") {
		o.Retries = -1 // none
	}
	for _, h := range t.Headers {
		o.Headers = append(o.Headers, [2]string{h.Key, h.Value})
	}
	return o
}

// KVMode says which key=value pairs of a message are written out.
type KVMode string

// Key=value modes.
const (
	KVUsed KVMode = "used" // the pairs the rules read
	KVAll  KVMode = "all"
	KVNone KVMode = "none"
)

// Validate checks the value.
func (m KVMode) Validate() error { return config.OneOf(m, KVUsed, KVAll, KVNone) }

// PipelineConfig tunes the batches and workers.
type PipelineConfig struct {
	At             config.At
	Workers        int // 0: GOMAXPROCS
	BatchSize      int // events per batch
	BatchBytes     int // bytes per batch
	FlushInterval  time.Duration
	Batches        int    // batches in flight (bounds memory); 0: derived
	KVFields       KVMode // used, all or none
	Original       bool   // write event.original
	StructuredData bool   // write log.syslog.structured_data
	// TLSClient writes tls.client.subject, the verified client
	// certificate of the connection (tcp inputs with tls.client_ca_file).
	TLSClient bool
	// EventTime is where the rules' lookups read an event's time: "",
	// syslog, receive or json.PATH (engine.Options.EventTime).
	EventTime string
	// Delivery is the pipeline's guarantee: at_least_once, or
	// exactly_once between an input and an output of types that support
	// it (InputKind.ExactlyOnce, OutputKind.ExactlyOnce).
	Delivery Guarantee
}

// Guarantee is a pipeline's delivery guarantee.
type Guarantee string

// Delivery guarantees.
const (
	AtLeastOnce Guarantee = "at_least_once"
	ExactlyOnce Guarantee = "exactly_once"
)

// Validate checks the value.
func (g Guarantee) Validate() error { return config.OneOf(g, AtLeastOnce, ExactlyOnce) }

// DeliveryChecker is implemented by the settings of types that support
// exactly-once delivery and refuse some of their settings in it:
// CheckDelivery reports them in s, the input's or output's scope.
type DeliveryChecker interface {
	CheckDelivery(s config.Scope, g Guarantee)
}

// HTTPConfig is the metrics and health endpoint, and the table lookup
// API (/v1/).
type HTTPConfig struct {
	At     config.At
	Listen string
	Pprof  bool // serve /debug/pprof/ too
	// Token is the bearer token the lookup API requires (from http.token,
	// or read from http.token_file). Without one (or APIClients), the API
	// answers only on a loopback address.
	Token string
	// APIClients lets HTTPS clients whose verified certificate has one of
	// these names use the lookup API without the token.
	APIClients []string
	// MetricsToken and MetricsClients, when either is set, are what
	// /metrics requires instead of being open; the lookup API's token and
	// clients do not open it (and those of /metrics do not open the API).
	MetricsToken   string
	MetricsClients []string
	// Conn are the tls: and limits: blocks of the HTTP listener.
	Conn listen.Config
	// ReadHeaderTimeout bounds the reading of a request's headers (a
	// slow client is closed then); RequestTimeout the reading of a whole
	// request and the writing of its answer.
	ReadHeaderTimeout, RequestTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers, MaxBodyBytes a _batch
	// request's body.
	MaxHeaderBytes, MaxBodyBytes int
}

// MemcachedConfig is the read-only memcached listener (text, meta and
// binary protocols).
type MemcachedConfig struct {
	At           config.At
	Listen       string
	DefaultTable string // table of keys given without "table:"
	ValueColumn  string // answer this column's value instead of the row as JSON
	MaxMatches   int    // above 1: a value is an array of up to this many matching rows
	// Conn are the tls: and limits: blocks of the listener (limits'
	// max_connections and idle_timeout are also taken beside them, as
	// they were written before).
	Conn listen.Config
}

// LogLevel is the lowest level logged.
type LogLevel string

// Validate checks the value.
func (l LogLevel) Validate() error { return config.OneOf(l, "debug", "info", "warn", "error") }

// LogFormat is how log lines are written.
type LogFormat string

// Validate checks the value.
func (f LogFormat) Validate() error { return config.OneOf(f, "json", "text") }

// LogConfig sets up log/slog.
type LogConfig struct {
	At     config.At
	Level  LogLevel
	Format LogFormat
}

// ConfigError is one problem in a configuration: it names the file, the
// line, the column and the field (or the flag).
type ConfigError = config.Error

// ConfigErrors lists every problem found in a configuration.
type ConfigErrors = config.Errors

// LoadConfig reads a configuration file, applies the defaults and
// validates it. A validation failure is a ConfigErrors naming
// file:line:column and the field of each problem.
func LoadConfig(path string) (*Config, error) {
	return LoadConfigWith(path, nil)
}

// LoadConfigWith is LoadConfig with change (command-line flags, say)
// applied to what the file holds before the defaults and the validation,
// so that the flags' values are checked as the file's are.
func LoadConfigWith(path string, change func(*Config)) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(path, b, change)
}

// ParseConfig parses a configuration held in memory, applies the
// defaults and validates it; path names it in errors and anchors relative
// paths.
func ParseConfig(path string, data []byte) (*Config, error) {
	return parseConfig(path, data, nil)
}

func parseConfig(path string, data []byte, change func(*Config)) (*Config, error) {
	d := &config.Decoder{File: path, Env: os.LookupEnv}
	cfg := decodeConfig(d, data)
	if cfg == nil {
		return nil, d.Errs
	}
	if change != nil {
		change(cfg)
	}
	cfg.setDefaults()
	v := &config.Validator{File: path, Errs: d.Errs}
	cfg.validate(v)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Validate applies the defaults to what is not set and checks the whole
// configuration, as ParseConfig does a file's. Use it for a configuration
// built in code.
func (cfg *Config) Validate() error {
	cfg.setDefaults()
	v := &config.Validator{File: cfg.File}
	cfg.validate(v)
	return v.Err()
}

// decodeConfig reads the file's values into a Config; it returns nil when
// the file is not a YAML mapping. Problems are in d.Errs.
func decodeConfig(d *config.Decoder, data []byte) *Config {
	root := d.Document(data, `a mapping with "inputs", "rules", "outputs" and the other sections`)
	if root == nil {
		return nil
	}
	cfg := newConfig()
	cfg.File = d.File
	dir := filepath.Dir(d.File)
	d.Mapping(root, "", &cfg.At, config.Keys{
		"inputs": func(v *yaml.Node) {
			d.List(v, "inputs", false, func(_ int, n *yaml.Node, path string) {
				cfg.Inputs = append(cfg.Inputs, decodeInput(d, n, path))
			})
		},
		"tables": func(v *yaml.Node) { cfg.Tables.decode(d, v, dir) },
		"rules": func(v *yaml.Node) {
			d.List(v, "rules", false, func(_ int, n *yaml.Node, path string) {
				cfg.Rules = append(cfg.Rules, decodeRule(d, n, path))
			})
		},
		"outputs": func(v *yaml.Node) {
			d.List(v, "outputs", false, func(_ int, n *yaml.Node, path string) {
				cfg.Outputs = append(cfg.Outputs, decodeOutput(d, n, path))
			})
		},
		"pipeline":         func(v *yaml.Node) { cfg.Pipeline.decode(d, v) },
		"http":             func(v *yaml.Node) { cfg.HTTP.decode(d, v, dir) },
		"memcached":        func(v *yaml.Node) { cfg.Memcached.decode(d, v) },
		"log":              func(v *yaml.Node) { cfg.Log.decode(d, v) },
		"shutdown_timeout": func(v *yaml.Node) { cfg.ShutdownTimeout, _ = d.Duration(v, "shutdown_timeout") },
		"drain_read_grace": func(v *yaml.Node) { cfg.DrainReadGrace, _ = d.Duration(v, "drain_read_grace") },
		"shutdown":         func(v *yaml.Node) { cfg.Shutdown.decode(d, v) },
		"queue":            func(v *yaml.Node) { cfg.Queue.decode(d, v, dir) },
	})
	return cfg
}

// resolve anchors a relative path at dir (the configuration's directory).
func resolve(dir, p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func (t *TablesConfig) decode(d *config.Decoder, n *yaml.Node, dir string) {
	d.Mapping(n, "tables", &t.At, config.Keys{
		"path": func(v *yaml.Node) {
			p, _ := d.String(v, "tables.path")
			if !tables.IsRemote(p) {
				p = resolve(dir, p)
			}
			t.Path = p
		},
		"verify":            func(v *yaml.Node) { s, _ := d.String(v, "tables.verify"); t.Verify = Verify(s) },
		"poll_interval":     func(v *yaml.Node) { t.PollInterval, _ = d.Duration(v, "tables.poll_interval") },
		"no_notify":         func(v *yaml.Node) { t.NoNotify, _ = d.Bool(v, "tables.no_notify") },
		"cache_dir":         func(v *yaml.Node) { p, _ := d.String(v, "tables.cache_dir"); t.CacheDir = resolve(dir, p) },
		"keep_versions":     func(v *yaml.Node) { t.KeepVersions, _ = d.Int(v, "tables.keep_versions") },
		"max_artifact_size": func(v *yaml.Node) { t.MaxArtifactSize, _ = d.Size(v, "tables.max_artifact_size") },
		"timeout":           func(v *yaml.Node) { t.Timeout, _ = d.Duration(v, "tables.timeout") },
		"retries":           func(v *yaml.Node) { t.Retries, _ = d.Int(v, "tables.retries") },
		"token":             func(v *yaml.Node) { t.Token, _ = d.String(v, "tables.token") },
		"token_file":        func(v *yaml.Node) { p, _ := d.String(v, "tables.token_file"); t.TokenFile = resolve(dir, p) },
		"headers":           func(v *yaml.Node) { t.Headers, _ = d.Pairs(v, "tables.headers") },
		"ca_file":           func(v *yaml.Node) { p, _ := d.String(v, "tables.ca_file"); t.CAFile = resolve(dir, p) },
		"cert_file":         func(v *yaml.Node) { p, _ := d.String(v, "tables.cert_file"); t.CertFile = resolve(dir, p) },
		"key_file":          func(v *yaml.Node) { p, _ := d.String(v, "tables.key_file"); t.KeyFile = resolve(dir, p) },
		"s3_endpoint":       func(v *yaml.Node) { t.S3Endpoint, _ = d.String(v, "tables.s3_endpoint") },
		"s3_path_style":     func(v *yaml.Node) { t.S3PathStyle, _ = d.Bool(v, "tables.s3_path_style") },
		"s3_region":         func(v *yaml.Node) { t.S3Region, _ = d.String(v, "tables.s3_region") },
	})
}

// Validate checks the tables section; s is its scope.
func (t *TablesConfig) Validate(s config.Scope, given bool) {
	if given {
		s.Require("path", t.Path != "", "a directory of tables, a manifest, or a remote manifest (https://, s3://)")
	}
	s.Check("verify", t.Verify.Validate())
	if tables.IsRemote(t.Path) {
		s.Require("cache_dir", t.CacheDir != "", "a remote manifest is fetched into a local cache directory (enrichd --tables-cache DIR)")
		if t.Token != "" && t.TokenFile != "" {
			s.Errorf("token_file", "give token or token_file, not both")
		}
		if (t.CertFile == "") != (t.KeyFile == "") {
			s.Errorf("cert_file", "a client certificate needs both cert_file and key_file")
		}
		if t.KeepVersions < 0 {
			s.Errorf("keep_versions", "must not be negative")
		}
		if t.Retries < 0 {
			s.Errorf("retries", "must not be negative")
		}
		if t.Timeout < 0 {
			s.Errorf("timeout", "must not be negative")
		}
		if t.MaxArtifactSize < 0 {
			s.Errorf("max_artifact_size", "must not be negative")
		}
		if strings.HasPrefix(strings.ToLower(t.Path), "s3://") {
			for _, k := range []string{"token", "token_file", "headers"} {
				if s.Given(k) {
					s.Errorf(k, "applies to an http:// or https:// manifest (an s3:// store takes AWS credentials)")
				}
			}
		}
		return
	}
	for _, k := range remoteKeys {
		if s.Given(k) {
			s.Errorf(k, "applies to a remote manifest only (tables.path is %s)", t.Path)
		}
	}
}

func (p *PipelineConfig) decode(d *config.Decoder, n *yaml.Node) {
	d.Mapping(n, "pipeline", &p.At, config.Keys{
		"workers":         func(v *yaml.Node) { p.Workers, _ = d.Int(v, "pipeline.workers") },
		"batch_size":      func(v *yaml.Node) { p.BatchSize, _ = d.Size(v, "pipeline.batch_size") },
		"batch_bytes":     func(v *yaml.Node) { p.BatchBytes, _ = d.Size(v, "pipeline.batch_bytes") },
		"flush_interval":  func(v *yaml.Node) { p.FlushInterval, _ = d.Duration(v, "pipeline.flush_interval") },
		"batches":         func(v *yaml.Node) { p.Batches, _ = d.Size(v, "pipeline.batches") },
		"kv_fields":       func(v *yaml.Node) { s, _ := d.String(v, "pipeline.kv_fields"); p.KVFields = KVMode(s) },
		"original":        func(v *yaml.Node) { p.Original, _ = d.Bool(v, "pipeline.original") },
		"structured_data": func(v *yaml.Node) { p.StructuredData, _ = d.Bool(v, "pipeline.structured_data") },
		"tls_client":      func(v *yaml.Node) { p.TLSClient, _ = d.Bool(v, "pipeline.tls_client") },
		"event_time":      func(v *yaml.Node) { p.EventTime, _ = d.String(v, "pipeline.event_time") },
		"delivery":        func(v *yaml.Node) { s, _ := d.String(v, "pipeline.delivery"); p.Delivery = Guarantee(s) },
	})
}

// Validate checks the pipeline section.
func (p *PipelineConfig) Validate(s config.Scope) {
	if p.Workers < 0 || p.Workers > MaxWorkers {
		s.Errorf("workers", "must be 0 (GOMAXPROCS) to %d, not %d", MaxWorkers, p.Workers)
	}
	for _, c := range []struct {
		key    string
		n, max int
	}{{"batch_size", p.BatchSize, MaxBatchSize}, {"batch_bytes", p.BatchBytes, MaxBufferBytes}, {"batches", p.Batches, MaxBatches}} {
		checkSize(s, c.key, c.n, c.max)
	}
	if p.FlushInterval < 0 {
		s.Errorf("flush_interval", "must not be negative")
	}
	s.Check("kv_fields", p.KVFields.Validate())
	s.Check("event_time", engine.CheckEventTime(p.EventTime))
	s.Check("delivery", p.Delivery.Validate())
}

func (h *HTTPConfig) decode(d *config.Decoder, n *yaml.Node, dir string) {
	both := config.Lookup(n, "token") != nil && config.Lookup(n, "token_file") != nil
	if both {
		d.Errorf(n, "http", "give token or token_file, not both")
	}
	bothM := config.Lookup(n, "metrics_token") != nil && config.Lookup(n, "metrics_token_file") != nil
	if bothM {
		d.Errorf(n, "http", "give metrics_token or metrics_token_file, not both")
	}
	keys := config.Keys{
		"listen": func(v *yaml.Node) { h.Listen, _ = d.String(v, "http.listen") },
		"pprof":  func(v *yaml.Node) { h.Pprof, _ = d.Bool(v, "http.pprof") },
		"token":  func(v *yaml.Node) { h.Token, _ = d.String(v, "http.token") },
		"token_file": func(v *yaml.Node) {
			if p, ok := d.String(v, "http.token_file"); ok && !both {
				h.Token = readSecret(d, v, "http.token_file", resolve(dir, p))
			}
		},
		"api_clients":   func(v *yaml.Node) { h.APIClients, _ = d.Strings(v, "http.api_clients") },
		"metrics_token": func(v *yaml.Node) { h.MetricsToken, _ = d.String(v, "http.metrics_token") },
		"metrics_token_file": func(v *yaml.Node) {
			if p, ok := d.String(v, "http.metrics_token_file"); ok && !bothM {
				h.MetricsToken = readSecret(d, v, "http.metrics_token_file", resolve(dir, p))
			}
		},
		"metrics_clients":     func(v *yaml.Node) { h.MetricsClients, _ = d.Strings(v, "http.metrics_clients") },
		"read_header_timeout": func(v *yaml.Node) { h.ReadHeaderTimeout, _ = d.Duration(v, "http.read_header_timeout") },
		"request_timeout":     func(v *yaml.Node) { h.RequestTimeout, _ = d.Duration(v, "http.request_timeout") },
		"max_header_bytes":    func(v *yaml.Node) { h.MaxHeaderBytes, _ = d.DefaultedSize(v, "http.max_header_bytes") },
		"max_body_bytes":      func(v *yaml.Node) { h.MaxBodyBytes, _ = d.DefaultedSize(v, "http.max_body_bytes") },
	}
	for k, f := range h.Conn.Keys(d, "http", false) {
		keys[k] = f
	}
	d.Mapping(n, "http", &h.At, keys)
}

// readSecret reads a token or password from a file; surrounding white
// space is dropped, and an empty file is an error.
func readSecret(d *config.Decoder, n *yaml.Node, field, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		d.Errorf(n, field, "%v", err)
		return ""
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		d.Errorf(n, field, "%s is empty", path)
	}
	return s
}

// Validate checks the HTTP section.
func (h *HTTPConfig) Validate(s config.Scope) {
	s.Check("listen", config.CheckAddr(h.Listen))
	h.Conn.Validate(s)
	for _, k := range []struct {
		key  string
		list []string
	}{{"api_clients", h.APIClients}, {"metrics_clients", h.MetricsClients}} {
		if len(k.list) > 0 && h.Conn.TLS.ClientCAFile == "" {
			s.Errorf(k.key, "needs tls.client_ca_file (the CA bundle that signs the client certificates)")
		}
	}
	if h.MetricsToken != "" && h.MetricsToken == h.Token {
		s.Errorf("metrics_token", "must differ from the lookup API's token: a metrics scraper must not read rows")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
		def time.Duration
	}{{"read_header_timeout", h.ReadHeaderTimeout, DefaultHTTPReadHeaderTimeout}, {"request_timeout", h.RequestTimeout, DefaultHTTPRequestTimeout}} {
		s.NotZero(d.key, d.v == 0, "a duration such as 10s", d.def)
		if d.v < 0 {
			s.Errorf(d.key, "must not be negative")
		}
	}
	for _, b := range []struct {
		key string
		v   int
	}{{"max_header_bytes", h.MaxHeaderBytes}, {"max_body_bytes", h.MaxBodyBytes}} {
		if b.v < 0 {
			s.Errorf(b.key, "must be a positive size, not %d", b.v)
		}
	}
}

func (m *MemcachedConfig) decode(d *config.Decoder, n *yaml.Node) {
	keys := config.Keys{
		"listen":        func(v *yaml.Node) { m.Listen, _ = d.String(v, "memcached.listen") },
		"default_table": func(v *yaml.Node) { m.DefaultTable, _ = d.String(v, "memcached.default_table") },
		"value_column":  func(v *yaml.Node) { m.ValueColumn, _ = d.String(v, "memcached.value_column") },
		"max_matches":   func(v *yaml.Node) { m.MaxMatches, _ = d.Int(v, "memcached.max_matches") },
	}
	for k, f := range m.Conn.Keys(d, "memcached", true) {
		keys[k] = f
	}
	d.Mapping(n, "memcached", &m.At, keys)
}

// Validate checks the memcached section; given says whether it was
// written at all.
func (m *MemcachedConfig) Validate(s config.Scope, given bool) {
	if given || m.DefaultTable != "" || m.ValueColumn != "" {
		s.Require("listen", m.Listen != "", "HOST:PORT")
	}
	s.Check("listen", config.CheckAddr(m.Listen))
	if s.Given("max_matches") && (m.MaxMatches < 1 || m.MaxMatches > serve.MaxMatchesLimit) {
		s.Errorf("max_matches", "must be from 1 to %d, not %d", serve.MaxMatchesLimit, m.MaxMatches)
	}
	m.Conn.Validate(s)
}

func (l *LogConfig) decode(d *config.Decoder, n *yaml.Node) {
	d.Mapping(n, "log", &l.At, config.Keys{
		"level":  func(v *yaml.Node) { s, _ := d.String(v, "log.level"); l.Level = LogLevel(s) },
		"format": func(v *yaml.Node) { s, _ := d.String(v, "log.format"); l.Format = LogFormat(s) },
	})
}

// Validate checks the log section.
func (l *LogConfig) Validate(s config.Scope) {
	s.Check("level", l.Level.Validate())
	s.Check("format", l.Format.Validate())
}

// validate checks the whole configuration, its defaults applied.
func (cfg *Config) validate(v *config.Validator) {
	s := v.In(&cfg.At, "")
	ts := s.In(&cfg.Tables.At, "tables")
	cfg.Tables.Validate(ts, cfg.At.Given("tables"))
	cfg.Pipeline.Validate(s.In(&cfg.Pipeline.At, "pipeline"))
	cfg.HTTP.Validate(s.In(&cfg.HTTP.At, "http"))
	cfg.Memcached.Validate(s.In(&cfg.Memcached.At, "memcached"), cfg.At.Given("memcached"))
	cfg.Log.Validate(s.In(&cfg.Log.At, "log"))
	cfg.Queue.Validate(s.In(&cfg.Queue.At, "queue"), cfg.At.Given("queue"), &cfg.Pipeline)
	inNames := map[string]bool{}
	for i := range cfg.Inputs {
		in := &cfg.Inputs[i]
		is := s.In(&in.At, config.Index("inputs", i))
		in.Validate(is)
		if inNames[in.Name] {
			is.Errorf("name", "input name %q is used twice (give each a name)", in.Name)
		}
		inNames[in.Name] = true
	}
	ruleNames, before := map[string]bool{}, len(v.Errs)
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		rs := s.In(&r.At, config.Index("rules", i))
		r.Validate(rs)
		if ruleNames[r.Name] {
			rs.Errorf("name", "rule name %q is used twice", r.Name)
		}
		ruleNames[r.Name] = true
	}
	if len(v.Errs) == before {
		cfg.checkRuleFields(s)
	}
	for i := range cfg.Outputs {
		cfg.Outputs[i].Validate(s.In(&cfg.Outputs[i].At, config.Index("outputs", i)))
	}
	if cfg.Pipeline.Delivery == ExactlyOnce {
		cfg.checkExactlyOnce(s)
	}
	cfg.checkDelivery(s)
	cfg.checkListeners(s)
	// A daemon with no inputs is a lookup server: it needs the tables and
	// the HTTP API or the memcached listener.
	server := cfg.Tables.Path != "" && (cfg.Memcached.Listen != "" || cfg.HTTP.Listen != "")
	if len(cfg.Inputs) == 0 && !server {
		s.Errorf("inputs", "at least one input is required (or, to only serve lookups, tables.path with http.listen or memcached.listen)")
	}
	if len(cfg.Outputs) == 0 && len(cfg.Inputs) > 0 {
		s.Errorf("outputs", "at least one output is required")
	}
	if cfg.Tables.Path == "" {
		switch {
		case cfg.Memcached.Listen != "":
			ts.Errorf("path", "required for the memcached listener")
		case len(cfg.Rules) > 0:
			ts.Errorf("path", "required when there are rules")
		}
	}
	if len(v.Errs) == before {
		// Only rules that are right one by one are checked together.
		if err := engine.Check(cfg.engineRules()); err != nil {
			s.Errorf("rules", "%v", err)
		}
	}
}
