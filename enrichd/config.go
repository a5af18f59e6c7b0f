package enrichd

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is a parsed and validated enrichd configuration.
type Config struct {
	File      string // the file it was read from ("" for flags)
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
}

// InputConfig is one input.
type InputConfig struct {
	Name           string // metric label; default "TYPE:ADDRESS"
	Type           string // tcp, udp or file
	Listen         string // tcp, udp
	Path           string // file ("-" is stdin)
	Format         string // syslog (default for tcp, udp), json, raw (default for file)
	MaxMessageSize int
	MaxConnections int           // tcp
	IdleTimeout    time.Duration // tcp: close a connection silent this long (0: never)
	ReadBuffer     int           // udp: SO_RCVBUF
	Kafka          KafkaInputConfig
	Line           int // config line, for errors at start
}

// KafkaConn is how a Kafka input or output reaches the cluster.
type KafkaConn struct {
	Brokers  []string
	ClientID string
	TLS      *TLSConfig  // nil: plain TCP
	SASL     *SASLConfig // nil: no authentication
}

// TLSConfig configures TLS to the brokers.
type TLSConfig struct {
	CAFile             string // PEM bundle of the CAs to trust; "" for the system pool
	CertFile, KeyFile  string // client certificate (mutual TLS)
	ServerName         string
	InsecureSkipVerify bool
}

// SASLConfig configures SASL authentication.
type SASLConfig struct {
	Mechanism          string // plain, scram-sha-256 or scram-sha-512
	Username, Password string
}

// KafkaInputConfig is a Kafka input: a member of a consumer group.
type KafkaInputConfig struct {
	KafkaConn
	Topics      []string
	Group       string
	StartOffset string // earliest or latest: where a partition with no committed offset starts
	// MaxUncommitted bounds the events fetched but not yet committed: the
	// most a crash can make the group read again.
	MaxUncommitted    int
	CommitInterval    time.Duration
	MinBytes          int
	MaxBytes          int
	MaxWait           time.Duration
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
}

// KafkaOutputConfig is a Kafka output.
type KafkaOutputConfig struct {
	KafkaConn
	Topic        string // fixed topic, or the default when TopicField is empty or missing
	TopicField   string // take the topic from this event field
	KeyField     string // take the message key from this event field
	BatchSize    int    // events per produce request at most
	BatchBytes   int    // bytes per produce request at most (before compression)
	Compression  string // none, gzip, snappy, lz4, zstd
	RequiredAcks string // all, one or none
	MaxAttempts  int    // produce attempts before the dead letter (0: retry forever when there is none)
	BackoffMin   time.Duration
	BackoffMax   time.Duration
	InFlight     int    // output batches being produced at once
	DeadLetter   string // file path, or "kafka:TOPIC"

	CreateTopic *KafkaTopicSpec // create missing topics so (nil: a missing topic stops the start)
}

// TablesConfig says where the live table set comes from.
type TablesConfig struct {
	Path         string        // directory or manifest
	Verify       string        // full, digest or none
	PollInterval time.Duration // 0: default
	NoNotify     bool
}

// RuleConfig is one enrichment rule.
type RuleConfig struct {
	Name   string
	Table  string
	Fields []string // one source field, or several for a composite key
	Target string   // dotted output path of the rule's object
	// Columns to keep (LUT): nil means every column, under its own name.
	Columns []Rename
	// MMDBFields: record path -> output name, in order.
	MMDBFields []Rename
	MMDB       bool // the rule reads an .mmdb table
	MissTag    string
	Defaults   []Rename // output name -> value on a miss
	Line       int
}

// Rename maps a source name (column or record path) to an output name.
type Rename struct{ From, To string }

// OutputConfig is one output.
type OutputConfig struct {
	Name       string
	Type       string // stdout, file, tcp
	Path       string // file
	Address    string // tcp
	BufferSize int    // bytes buffered (file, tcp)
	Kafka      KafkaOutputConfig
}

// PipelineConfig tunes the batches and workers.
type PipelineConfig struct {
	Workers        int // 0: GOMAXPROCS
	BatchSize      int // events per batch
	BatchBytes     int // bytes per batch
	FlushInterval  time.Duration
	Batches        int    // batches in flight (bounds memory); 0: derived
	KVFields       string // used, all or none
	Original       bool   // write event.original
	StructuredData bool   // write log.syslog.structured_data
}

// HTTPConfig is the metrics and health endpoint, and the table lookup
// API (/v1/).
type HTTPConfig struct {
	Listen string
	Pprof  bool // serve /debug/pprof/ too
	// Token is the bearer token the lookup API requires (from http.token,
	// or read from http.token_file). Without one, the API answers only on
	// a loopback address.
	Token string
}

// MemcachedConfig is the read-only memcached listener (text, meta and
// binary protocols).
type MemcachedConfig struct {
	Listen         string
	DefaultTable   string        // table of keys given without "table:"
	ValueColumn    string        // answer this column's value instead of the row as JSON
	MaxConnections int           // open connections at most (0: 1024, memcached's default)
	IdleTimeout    time.Duration // close a connection silent this long (0: never)
}

// LogConfig sets up log/slog.
type LogConfig struct{ Level, Format string }

// ConfigError is one problem in a configuration file: it names the file,
// the line and the field.
type ConfigError struct {
	File   string
	Line   int
	Column int
	Field  string
	Msg    string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors lists every problem found in a configuration.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Defaults.
const (
	DefaultMaxMessageSize = 64 << 10
	DefaultMaxConnections = 4096
	DefaultBatchSize      = 512
	DefaultBatchBytes     = 256 << 10
	DefaultFlushInterval  = 5 * time.Millisecond
	DefaultOutputBuffer   = 1 << 20

	DefaultKafkaMaxUncommitted = 100_000
	DefaultKafkaCommitInterval = time.Second
	DefaultKafkaBatchSize      = 10_000
	DefaultKafkaBatchBytes     = 1_000_000 // below the brokers' default message.max.bytes
	DefaultKafkaMaxAttempts    = 10
	DefaultKafkaInFlight       = 8
)

// DefaultConfig returns a configuration with every default set and no
// inputs, rules or outputs.
func DefaultConfig() *Config {
	return &Config{
		Tables: TablesConfig{Verify: "digest"},
		Pipeline: PipelineConfig{
			BatchSize: DefaultBatchSize, BatchBytes: DefaultBatchBytes,
			FlushInterval: DefaultFlushInterval, KVFields: "used", StructuredData: true,
		},
		Log:             LogConfig{Level: "info", Format: "json"},
		ShutdownTimeout: 30 * time.Second,
		DrainReadGrace:  500 * time.Millisecond,
	}
}

// LoadConfig reads and validates a configuration file. A validation
// failure is a ConfigErrors naming file:line:column and the field of each
// problem.
func LoadConfig(path string) (*Config, error) {
	return LoadConfigWith(path, LoadOptions{})
}

// LoadOptions relax the checks of LoadConfigWith for a configuration
// that command-line flags complete.
type LoadOptions struct {
	NoInputs  bool // inputs may be missing (given by flags)
	NoOutputs bool // outputs may be missing (given by flags)
}

// LoadConfigWith is LoadConfig with options.
func LoadConfigWith(path string, opts LoadOptions) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(path, b, opts)
}

// ParseConfig parses and validates a configuration held in memory; path
// names it in errors and anchors relative paths.
func ParseConfig(path string, data []byte) (*Config, error) {
	return parseConfig(path, data, LoadOptions{})
}

func parseConfig(path string, data []byte, opts LoadOptions) (*Config, error) {
	p := &cparser{file: path, opts: opts}
	cfg := DefaultConfig()
	cfg.File = path
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, ConfigErrors{{File: path, Msg: err.Error()}}
	}
	if len(doc.Content) == 0 {
		return nil, ConfigErrors{{File: path, Msg: "empty configuration"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errf(root, "", "the top level must be a mapping")
		return nil, p.errs
	}
	p.fields(root, "", map[string]func(k, v *yaml.Node){
		"inputs": func(k, v *yaml.Node) {
			p.list(v, "inputs", func(i int, n *yaml.Node) {
				cfg.Inputs = append(cfg.Inputs, p.input(n, fmt.Sprintf("inputs[%d]", i)))
			})
		},
		"tables": func(k, v *yaml.Node) { p.tables(v, &cfg.Tables) },
		"rules": func(k, v *yaml.Node) {
			p.list(v, "rules", func(i int, n *yaml.Node) {
				cfg.Rules = append(cfg.Rules, p.rule(n, fmt.Sprintf("rules[%d]", i)))
			})
		},
		"outputs": func(k, v *yaml.Node) {
			p.list(v, "outputs", func(i int, n *yaml.Node) {
				cfg.Outputs = append(cfg.Outputs, p.output(n, fmt.Sprintf("outputs[%d]", i)))
			})
		},
		"pipeline": func(k, v *yaml.Node) { p.pipeline(v, &cfg.Pipeline) },
		"http": func(k, v *yaml.Node) {
			p.fields(v, "http", map[string]func(k, v *yaml.Node){
				"listen": func(k, v *yaml.Node) { cfg.HTTP.Listen = p.addr(v, "http.listen") },
				"pprof":  func(k, v *yaml.Node) { cfg.HTTP.Pprof = p.bool(v, "http.pprof") },
				"token":  func(k, v *yaml.Node) { cfg.HTTP.Token = p.token(v, "http.token", "") },
				"token_file": func(k, v *yaml.Node) {
					cfg.HTTP.Token = p.token(v, "http.token_file", filepath.Dir(path))
				},
			})
		},
		"memcached": func(k, v *yaml.Node) {
			p.fields(v, "memcached", map[string]func(k, v *yaml.Node){
				"listen":        func(k, v *yaml.Node) { cfg.Memcached.Listen = p.addr(v, "memcached.listen") },
				"default_table": func(k, v *yaml.Node) { cfg.Memcached.DefaultTable = p.str(v, "memcached.default_table") },
				"value_column":  func(k, v *yaml.Node) { cfg.Memcached.ValueColumn = p.str(v, "memcached.value_column") },
				"max_connections": func(k, v *yaml.Node) {
					cfg.Memcached.MaxConnections = p.posInt(v, "memcached.max_connections")
				},
				"idle_timeout": func(k, v *yaml.Node) { cfg.Memcached.IdleTimeout = p.dur(v, "memcached.idle_timeout") },
			})
			if cfg.Memcached.Listen == "" {
				p.errf(v, "memcached.listen", "required (HOST:PORT)")
			}
		},
		"log": func(k, v *yaml.Node) {
			p.fields(v, "log", map[string]func(k, v *yaml.Node){
				"level":  func(k, v *yaml.Node) { cfg.Log.Level = p.enum(v, "log.level", "debug", "info", "warn", "error") },
				"format": func(k, v *yaml.Node) { cfg.Log.Format = p.enum(v, "log.format", "json", "text") },
			})
		},
		"shutdown_timeout": func(k, v *yaml.Node) { cfg.ShutdownTimeout = p.dur(v, "shutdown_timeout") },
		"drain_read_grace": func(k, v *yaml.Node) { cfg.DrainReadGrace = p.dur(v, "drain_read_grace") },
	})
	if cfg.Tables.Path != "" && !filepath.IsAbs(cfg.Tables.Path) {
		cfg.Tables.Path = filepath.Join(filepath.Dir(path), cfg.Tables.Path)
	}
	for i := range cfg.Outputs {
		if o := &cfg.Outputs[i]; o.Type == "file" && o.Path != "" && !filepath.IsAbs(o.Path) {
			o.Path = filepath.Join(filepath.Dir(path), o.Path)
		}
		if dl := &cfg.Outputs[i].Kafka.DeadLetter; *dl != "" && !strings.HasPrefix(*dl, "kafka:") && !filepath.IsAbs(*dl) {
			*dl = filepath.Join(filepath.Dir(path), *dl)
		}
	}
	p.crossCheck(cfg, root)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return cfg, nil
}

// Validate checks a configuration built in code (from flags): the same
// cross-field checks ParseConfig runs.
func (cfg *Config) Validate() error {
	p := &cparser{file: cfg.File}
	if p.file == "" {
		p.file = "flags"
	}
	p.crossCheck(cfg, nil)
	if len(p.errs) > 0 {
		return p.errs
	}
	return nil
}

type cparser struct {
	file string
	opts LoadOptions
	errs ConfigErrors
}

func (p *cparser) errf(n *yaml.Node, field, format string, args ...any) {
	e := &ConfigError{File: p.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (p *cparser) fields(m *yaml.Node, prefix string, handlers map[string]func(k, v *yaml.Node)) {
	if m.Kind != yaml.MappingNode {
		p.errf(m, prefix, "must be a mapping")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := join(prefix, k.Value)
		if k.Kind != yaml.ScalarNode {
			p.errf(k, prefix, "a key must be a plain name")
			continue
		}
		if seen[k.Value] {
			p.errf(k, name, "given twice")
			continue
		}
		seen[k.Value] = true
		h, ok := handlers[k.Value]
		if !ok {
			names := make([]string, 0, len(handlers))
			for n := range handlers {
				names = append(names, n)
			}
			sort.Strings(names)
			p.errf(k, name, "unknown field (known: %s)", strings.Join(names, ", "))
			continue
		}
		h(k, v)
	}
}

func (p *cparser) list(v *yaml.Node, field string, fn func(i int, n *yaml.Node)) {
	if v.Kind != yaml.SequenceNode {
		p.errf(v, field, "must be a list")
		return
	}
	for i, n := range v.Content {
		fn(i, n)
	}
}

func (p *cparser) str(v *yaml.Node, field string) string {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.errf(v, field, "must be a string")
		return ""
	}
	return v.Value
}

func (p *cparser) enum(v *yaml.Node, field string, allowed ...string) string {
	s := p.str(v, field)
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	if s != "" || v.Kind == yaml.ScalarNode {
		p.errf(v, field, "must be one of %s, not %q", strings.Join(allowed, ", "), s)
	}
	return ""
}

func (p *cparser) bool(v *yaml.Node, field string) bool {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		p.errf(v, field, "must be true or false, not %q", v.Value)
	}
	return b
}

func (p *cparser) posInt(v *yaml.Node, field string) int {
	n, err := parseSize(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
		p.errf(v, field, "must be a positive integer (suffixes KiB, MiB allowed), not %q", v.Value)
		return 0
	}
	return n
}

// parseSize parses "123", "64KiB", "4MiB", "1GiB".
func parseSize(s string) (int, error) {
	mult := 1
	for _, u := range []struct {
		suf string
		m   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suf)), u.m
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n > (1<<40)/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}

func (p *cparser) dur(v *yaml.Node, field string) time.Duration {
	d, err := time.ParseDuration(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || d < 0 {
		p.errf(v, field, "must be a duration such as 5ms, 30s or 10m, not %q", v.Value)
		return 0
	}
	return d
}

func (p *cparser) addr(v *yaml.Node, field string) string {
	s := p.str(v, field)
	if s == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		p.errf(v, field, "must be HOST:PORT: %v", err)
	}
	return s
}

// token reads a bearer token given inline (dir "") or in a file (a path
// relative to dir); surrounding white space is dropped.
func (p *cparser) token(v *yaml.Node, field, dir string) string {
	s := p.str(v, field)
	if s == "" || dir == "" {
		return s
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(dir, s)
	}
	b, err := os.ReadFile(s)
	if err != nil {
		p.errf(v, field, "%v", err)
		return ""
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		p.errf(v, field, "%s is empty", s)
	}
	return t
}

func (p *cparser) strs(v *yaml.Node, field string) []string {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag != "!!null" && v.Value != "" {
			return []string{v.Value}
		}
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode || c.Tag == "!!null" || c.Value == "" {
				p.errf(c, field, "must be a list of non-empty strings")
				return nil
			}
			out = append(out, c.Value)
		}
		if len(out) > 0 {
			return out
		}
	}
	p.errf(v, field, "must be a non-empty string or list of strings")
	return nil
}

// renames accepts a list of names (kept as is), or a mapping from names
// to new names, or a list mixing names and one-entry mappings.
func (p *cparser) renames(v *yaml.Node, field string) []Rename {
	var out []Rename
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], v.Content[i+1]
			from, to := p.str(k, field), p.str(val, join(field, k.Value))
			if from == "" || to == "" {
				p.errf(k, field, "names must not be empty")
				continue
			}
			out = append(out, Rename{from, to})
		}
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if c.Kind == yaml.MappingNode {
				out = append(out, p.renames(c, field)...)
				continue
			}
			s := p.str(c, field)
			if s != "" {
				out = append(out, Rename{s, s})
			}
		}
	default:
		p.errf(v, field, "must be a list of names or a mapping from name to output name")
	}
	if len(out) == 0 {
		p.errf(v, field, "must not be empty")
	}
	return out
}

func (p *cparser) input(n *yaml.Node, field string) InputConfig {
	in := InputConfig{MaxMessageSize: DefaultMaxMessageSize, MaxConnections: DefaultMaxConnections, Line: n.Line}
	p.fields(n, field, map[string]func(k, v *yaml.Node){
		"name":             func(k, v *yaml.Node) { in.Name = p.str(v, field+".name") },
		"type":             func(k, v *yaml.Node) { in.Type = p.enum(v, field+".type", "tcp", "udp", "file", "kafka") },
		"listen":           func(k, v *yaml.Node) { in.Listen = p.addr(v, field+".listen") },
		"path":             func(k, v *yaml.Node) { in.Path = p.str(v, field+".path") },
		"format":           func(k, v *yaml.Node) { in.Format = p.enum(v, field+".format", "syslog", "json", "raw") },
		"max_message_size": func(k, v *yaml.Node) { in.MaxMessageSize = p.posInt(v, field+".max_message_size") },
		"max_connections":  func(k, v *yaml.Node) { in.MaxConnections = p.posInt(v, field+".max_connections") },
		"idle_timeout":     func(k, v *yaml.Node) { in.IdleTimeout = p.dur(v, field+".idle_timeout") },
		"read_buffer":      func(k, v *yaml.Node) { in.ReadBuffer = p.posInt(v, field+".read_buffer") },
		"kafka":            func(k, v *yaml.Node) { p.kafkaInput(v, field+".kafka", &in.Kafka) },
	})
	switch in.Type {
	case "":
		p.errf(n, field+".type", "required (tcp, udp, file or kafka)")
	case "kafka":
		if len(in.Kafka.Brokers) == 0 {
			p.errf(n, field+".kafka", "required for a kafka input (brokers, topics, group)")
		}
	case "tcp", "udp":
		if in.Listen == "" {
			p.errf(n, field+".listen", "required for a %s input", in.Type)
		}
		if in.Path != "" {
			p.errf(n, field+".path", "only for a file input")
		}
	case "file":
		if in.Path == "" {
			p.errf(n, field+".path", "required for a file input (\"-\" is stdin)")
		}
		if in.Listen != "" {
			p.errf(n, field+".listen", "only for tcp and udp inputs")
		}
	}
	if in.Type != "kafka" && in.Kafka.Brokers != nil {
		p.errf(n, field+".kafka", "only for a kafka input")
	}
	return in
}

func (p *cparser) tables(v *yaml.Node, t *TablesConfig) {
	p.fields(v, "tables", map[string]func(k, v *yaml.Node){
		"path":          func(k, v *yaml.Node) { t.Path = p.str(v, "tables.path") },
		"verify":        func(k, v *yaml.Node) { t.Verify = p.enum(v, "tables.verify", "full", "digest", "none") },
		"poll_interval": func(k, v *yaml.Node) { t.PollInterval = p.dur(v, "tables.poll_interval") },
		"no_notify":     func(k, v *yaml.Node) { t.NoNotify = p.bool(v, "tables.no_notify") },
	})
	if t.Path == "" {
		p.errf(v, "tables.path", "required: a directory of tables or a manifest")
	}
}

func (p *cparser) rule(n *yaml.Node, field string) RuleConfig {
	r := RuleConfig{Line: n.Line}
	var hasColumns bool
	var colNode *yaml.Node
	p.fields(n, field, map[string]func(k, v *yaml.Node){
		"name":   func(k, v *yaml.Node) { r.Name = p.str(v, field+".name") },
		"table":  func(k, v *yaml.Node) { r.Table = p.str(v, field+".table") },
		"field":  func(k, v *yaml.Node) { r.Fields = p.strs(v, field+".field") },
		"fields": func(k, v *yaml.Node) { r.Fields = p.strs(v, field+".fields") },
		"target": func(k, v *yaml.Node) { r.Target = p.str(v, field+".target") },
		"columns": func(k, v *yaml.Node) {
			hasColumns, colNode = true, v
			if v.Kind == yaml.ScalarNode && v.Value == "all" {
				return
			}
			r.Columns = p.renames(v, field+".columns")
		},
		"mmdb_fields": func(k, v *yaml.Node) {
			r.MMDB = true
			r.MMDBFields = p.renames(v, field+".mmdb_fields")
		},
		"on_miss": func(k, v *yaml.Node) {
			p.fields(v, field+".on_miss", map[string]func(k, v *yaml.Node){
				"tag":      func(k, v *yaml.Node) { r.MissTag = p.str(v, field+".on_miss.tag") },
				"defaults": func(k, v *yaml.Node) { r.Defaults = p.renames(v, field+".on_miss.defaults") },
			})
		},
	})
	if r.Table == "" {
		p.errf(n, field+".table", "required")
	}
	if len(r.Fields) == 0 {
		p.errf(n, field+".field", "required: the source field (or fields, for a composite key)")
	}
	if r.Name == "" {
		r.Name = r.Table
	}
	if r.Target == "" {
		r.Target = r.Name
	}
	if r.MMDB && hasColumns {
		p.errf(colNode, field+".columns", "a rule has either columns (.lut table) or mmdb_fields (.mmdb table)")
	}
	if r.MMDB && len(r.Fields) != 1 {
		p.errf(n, field+".field", "an mmdb rule takes exactly one field (an IP address)")
	}
	for _, f := range r.Fields {
		if _, err := parseFieldRef(f); err != nil {
			p.errf(n, field+".field", "%v", err)
		}
	}
	if err := checkPath(r.Target); err != nil {
		p.errf(n, field+".target", "%v", err)
	}
	for _, m := range r.MMDBFields {
		if err := checkPath(m.To); err != nil {
			p.errf(n, field+".mmdb_fields", "%q: %v", m.To, err)
		}
	}
	return r
}

func checkPath(s string) error {
	if s == "" {
		return fmt.Errorf("empty output name")
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return fmt.Errorf("%q has an empty segment", s)
		}
	}
	return nil
}

func (p *cparser) output(n *yaml.Node, field string) OutputConfig {
	o := OutputConfig{BufferSize: DefaultOutputBuffer}
	p.fields(n, field, map[string]func(k, v *yaml.Node){
		"name":        func(k, v *yaml.Node) { o.Name = p.str(v, field+".name") },
		"type":        func(k, v *yaml.Node) { o.Type = p.enum(v, field+".type", "stdout", "file", "tcp", "kafka") },
		"path":        func(k, v *yaml.Node) { o.Path = p.str(v, field+".path") },
		"address":     func(k, v *yaml.Node) { o.Address = p.addr(v, field+".address") },
		"buffer_size": func(k, v *yaml.Node) { o.BufferSize = p.posInt(v, field+".buffer_size") },
		"kafka":       func(k, v *yaml.Node) { p.kafkaOutput(v, field+".kafka", &o.Kafka) },
	})
	if o.Type != "kafka" && o.Kafka.Brokers != nil {
		p.errf(n, field+".kafka", "only for a kafka output")
	}
	switch o.Type {
	case "":
		p.errf(n, field+".type", "required (stdout, file, tcp or kafka)")
	case "kafka":
		if len(o.Kafka.Brokers) == 0 {
			p.errf(n, field+".kafka", "required for a kafka output (brokers, topic)")
		}
	case "file":
		if o.Path == "" {
			p.errf(n, field+".path", "required for a file output")
		}
	case "tcp":
		if o.Address == "" {
			p.errf(n, field+".address", "required for a tcp output")
		}
	}
	return o
}

func (p *cparser) pipeline(v *yaml.Node, pc *PipelineConfig) {
	p.fields(v, "pipeline", map[string]func(k, v *yaml.Node){
		"workers": func(k, v *yaml.Node) {
			if v.Kind == yaml.ScalarNode && v.Value == "0" {
				pc.Workers = 0 // GOMAXPROCS
				return
			}
			pc.Workers = p.posInt(v, "pipeline.workers")
		},
		"batch_size":      func(k, v *yaml.Node) { pc.BatchSize = p.posInt(v, "pipeline.batch_size") },
		"batch_bytes":     func(k, v *yaml.Node) { pc.BatchBytes = p.posInt(v, "pipeline.batch_bytes") },
		"flush_interval":  func(k, v *yaml.Node) { pc.FlushInterval = p.dur(v, "pipeline.flush_interval") },
		"batches":         func(k, v *yaml.Node) { pc.Batches = p.posInt(v, "pipeline.batches") },
		"kv_fields":       func(k, v *yaml.Node) { pc.KVFields = p.enum(v, "pipeline.kv_fields", "used", "all", "none") },
		"original":        func(k, v *yaml.Node) { pc.Original = p.bool(v, "pipeline.original") },
		"structured_data": func(k, v *yaml.Node) { pc.StructuredData = p.bool(v, "pipeline.structured_data") },
	})
}

// crossCheck runs the checks that span sections. root may be nil.
func (p *cparser) crossCheck(cfg *Config, root *yaml.Node) {
	at := func(key string) *yaml.Node {
		if root == nil {
			return nil
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				return root.Content[i]
			}
		}
		return root
	}
	// A daemon with no inputs is a lookup server: it needs the tables and
	// the HTTP API or the memcached listener.
	server := cfg.Tables.Path != "" && (cfg.Memcached.Listen != "" || cfg.HTTP.Listen != "")
	if len(cfg.Inputs) == 0 && !p.opts.NoInputs && !server {
		p.errf(at("inputs"), "inputs", "at least one input is required (or, to only serve lookups, tables.path with http.listen or memcached.listen)")
	}
	if len(cfg.Outputs) == 0 && !p.opts.NoOutputs && len(cfg.Inputs) > 0 {
		p.errf(at("outputs"), "outputs", "at least one output is required")
	}
	if cfg.Memcached.Listen != "" && cfg.Tables.Path == "" {
		p.errf(at("memcached"), "tables.path", "required for the memcached listener")
	}
	if len(cfg.Rules) > 0 && cfg.Tables.Path == "" {
		p.errf(at("tables"), "tables.path", "required when there are rules")
	}
	names := map[string]bool{}
	for i, r := range cfg.Rules {
		if names[r.Name] {
			p.errf(nodeAtLine(root, r.Line), fmt.Sprintf("rules[%d].name", i), "rule name %q is used twice", r.Name)
		}
		names[r.Name] = true
	}
	inNames := map[string]bool{}
	for i := range cfg.Inputs {
		in := &cfg.Inputs[i]
		if in.Format == "" {
			in.Format = "syslog"
			if in.Type == "file" {
				in.Format = "raw"
			}
		}
		if in.Name == "" {
			in.Name = in.Type + ":" + in.Listen + in.Path + strings.Join(in.Kafka.Topics, ",")
		}
		if inNames[in.Name] {
			p.errf(nodeAtLine(root, in.Line), fmt.Sprintf("inputs[%d].name", i), "input name %q is used twice (give each a name)", in.Name)
		}
		inNames[in.Name] = true
	}
	for i := range cfg.Outputs {
		if o := &cfg.Outputs[i]; o.Name == "" {
			o.Name = o.Type + ":" + o.Path + o.Address + o.Kafka.Topic
		}
	}
	if cfg.Pipeline.Workers == 0 {
		cfg.Pipeline.Workers = runtime.GOMAXPROCS(0)
	}
	if _, err := buildTree(cfg); err != nil {
		p.errf(at("rules"), "rules", "%v", err)
	}
}

func nodeAtLine(root *yaml.Node, line int) *yaml.Node {
	if root == nil || line == 0 {
		return nil
	}
	return &yaml.Node{Line: line, Column: 1}
}
