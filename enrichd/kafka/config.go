package kafka

import (
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/internal/config"
)

// Defaults of the Kafka settings.
const (
	DefaultMaxUncommitted = 100_000
	DefaultCommitInterval = time.Second
	DefaultBatchSize      = 10_000
	DefaultBatchBytes     = 1_000_000 // below the brokers' default message.max.bytes
	DefaultMaxAttempts    = 10
	DefaultInFlight       = 8
	// A partition's batch waits DefaultLinger for more events before it
	// is sent (linger). With kgo's own default, 10ms, the Kafka-to-Kafka
	// benchmark used 1.14-1.17x the CPU per event and 1.6x the time of
	// 1ms (BENCHMARKS.md).
	DefaultLinger = time.Millisecond
	// MaxLinger is the longest linger kgo takes.
	MaxLinger = time.Minute
	// An output retries a failed produce after DefaultBackoffMin, doubling
	// the wait up to DefaultBackoffMax (backoff_min and backoff_max):
	// brokers that return are used within about a second.
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = time.Second
	DefaultAssignor   = "cooperative-sticky"
	// The group membership and fetch settings of an input are set here
	// rather than left to the client library, so that an upgrade of it
	// cannot change them: the Java client's session.timeout.ms and
	// fetch.max.bytes, a rebalance that may take a minute, and a fetch
	// that waits up to 5s only when there is nothing to read (min_bytes 1
	// answers as soon as there is a record).
	DefaultSessionTimeout    = 45 * time.Second
	DefaultHeartbeatInterval = 3 * time.Second
	DefaultRebalanceTimeout  = time.Minute
	DefaultMinBytes          = 1
	DefaultMaxBytes          = 50 << 20
	DefaultMaxWait           = 5 * time.Second
	// With delivery: exactly_once, a transaction that its producer
	// neither commits nor aborts within DefaultTransactionTimeout (a
	// member killed in it) is aborted by the brokers.
	DefaultTransactionTimeout = 20 * time.Second
	DefaultTransactionalID    = "enrichd"
	DefaultClientID           = "enrichd"
)

// Conn is how a Kafka input or output reaches the cluster.
type Conn struct {
	Brokers  []string
	ClientID string
	TLS      *TLSConfig  // nil: plain TCP
	SASL     *SASLConfig // nil: no authentication
}

// TLSConfig configures TLS to the brokers (a server_name of "" is each
// broker's host).
type TLSConfig = enrichd.ClientTLS

// SASLMechanism is a SASL authentication mechanism.
type SASLMechanism string

// Validate checks the value.
func (m SASLMechanism) Validate() error {
	return config.OneOf(m, "plain", "scram-sha-256", "scram-sha-512")
}

// SASLConfig configures SASL authentication.
type SASLConfig struct {
	At                 config.At
	Mechanism          SASLMechanism // plain, scram-sha-256 or scram-sha-512
	Username, Password string
}

// Assignor is how a consumer group spreads its partitions over its
// members.
type Assignor string

// Validate checks the value.
func (a Assignor) Validate() error {
	return config.OneOf(a, "cooperative-sticky", "range", "roundrobin")
}

// StartOffset is where a partition without a committed offset starts.
type StartOffset string

// Validate checks the value.
func (o StartOffset) Validate() error { return config.OneOf(o, "earliest", "latest") }

// InputConfig is a Kafka input: a member of a consumer group. It is
// the input's "kafka" block.
type InputConfig struct {
	At config.At
	Conn
	Topics []string
	Group  string
	// Assignor is cooperative-sticky (the default: a rebalance moves only
	// the partitions that change owner, the others are read on), range or
	// roundrobin (eager: every member stops on every rebalance).
	Assignor Assignor
	// InstanceID makes the member a static one (group.instance.id): a
	// member that restarts within session_timeout gets its partitions
	// back without a rebalance. Unique in the group; "" for none.
	InstanceID  string
	StartOffset StartOffset // earliest or latest: where a partition with no committed offset starts
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

// Compression is a Kafka output's compression codec.
type Compression string

// Validate checks the value.
func (c Compression) Validate() error {
	return config.OneOf(c, "none", "gzip", "snappy", "lz4", "zstd")
}

// RequiredAcks is how many replicas must have an event before a produce
// succeeds.
type RequiredAcks string

// Validate checks the value.
func (r RequiredAcks) Validate() error { return config.OneOf(r, "all", "one", "none") }

// OutputConfig is a Kafka output: the output's "kafka" block.
type OutputConfig struct {
	At config.At
	Conn
	Topic        string        // fixed topic, or the default when TopicField is empty or missing
	TopicField   string        // take the topic from this event field
	KeyField     string        // take the message key from this event field
	BatchSize    int           // accepted for older configurations and ignored: kgo batches by bytes
	BatchBytes   int           // bytes per produce request at most (before compression)
	Linger       time.Duration // how long a partition's batch waits for more events
	Compression  Compression   // none, gzip, snappy, lz4, zstd
	RequiredAcks RequiredAcks  // all, one or none
	MaxAttempts  int           // produce attempts before the dead letter (0: retry forever when there is none)
	BackoffMin   time.Duration
	BackoffMax   time.Duration
	InFlight     int    // output batches being produced at once
	DeadLetter   string // file path, or "kafka:TOPIC"
	// TransactionalID is the prefix of the producer's transactional id
	// with delivery: exactly_once (the input's instance_id, or a random
	// suffix, completes it); TransactionTimeout is how long the brokers
	// let a transaction stay open before they abort it.
	TransactionalID    string
	TransactionTimeout time.Duration

	CreateTopic *TopicSpec // create missing topics so (nil: a missing topic stops the start)
}

// TopicSpec is how a Kafka output creates a topic that does not
// exist (create_topic).
type TopicSpec struct {
	At                config.At
	Partitions        int // -1: the brokers' num.partitions
	ReplicationFactor int // -1: the brokers' default.replication.factor
}

// connKeys are the handlers of the connection settings shared by Kafka
// inputs and outputs, added to keys.
func (c *Conn) connKeys(d *config.Decoder, field string, keys config.Keys) config.Keys {
	f := func(key string) string { return config.Field(field, key) }
	dir := filepath.Dir(d.File)
	keys["brokers"] = func(v *yaml.Node) { c.Brokers, _ = d.Strings(v, f("brokers")) }
	keys["client_id"] = func(v *yaml.Node) { c.ClientID, _ = d.String(v, f("client_id")) }
	keys["tls"] = enrichd.ClientTLSKey(d, f("tls"), &c.TLS, true)
	keys["sasl"] = func(v *yaml.Node) {
		s, sf := &SASLConfig{}, f("sasl")
		c.SASL = s
		d.Mapping(v, sf, &s.At, config.Keys{
			"mechanism": func(v *yaml.Node) { m, _ := d.String(v, config.Field(sf, "mechanism")); s.Mechanism = SASLMechanism(m) },
			"username":  func(v *yaml.Node) { s.Username, _ = d.String(v, config.Field(sf, "username")) },
			"password":  func(v *yaml.Node) { s.Password, _ = d.String(v, config.Field(sf, "password")) },
			"password_file": func(v *yaml.Node) {
				if p, ok := d.String(v, config.Field(sf, "password_file")); ok {
					s.Password = enrichd.ReadSecret(d, v, config.Field(sf, "password_file"), enrichd.ResolvePath(dir, p))
				}
			},
		})
	}
	return keys
}

// validate checks the connection settings in the scope of the kafka block.
func (c *Conn) validate(s config.Scope) {
	s.Require("brokers", len(c.Brokers) > 0, "the bootstrap brokers (HOST:PORT, ...)")
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			s.Errorf("brokers", "%q: want HOST:PORT", b)
		}
	}
	c.TLS.Validate(s)
	if a := c.SASL; a != nil {
		as := s.In(&a.At, "sasl")
		if a.Mechanism == "" || a.Username == "" {
			as.Errorf("", "mechanism and username are required")
		}
		if a.Mechanism != "" {
			as.Check("mechanism", a.Mechanism.Validate())
		}
	}
}

// Keys is the input's "kafka" key.
func (k *InputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return config.Keys{"kafka": func(v *yaml.Node) { k.decode(d, v, config.Field(field, "kafka")) }}
}

func (k *InputConfig) decode(d *config.Decoder, v *yaml.Node, field string) {
	f := func(key string) string { return config.Field(field, key) }
	d.Mapping(v, field, &k.At, k.connKeys(d, field, config.Keys{
		"topics":             func(v *yaml.Node) { k.Topics, _ = d.Strings(v, f("topics")) },
		"topic":              func(v *yaml.Node) { k.Topics, _ = d.Strings(v, f("topic")) },
		"group":              func(v *yaml.Node) { k.Group, _ = d.String(v, f("group")) },
		"assignor":           func(v *yaml.Node) { s, _ := d.String(v, f("assignor")); k.Assignor = Assignor(s) },
		"instance_id":        func(v *yaml.Node) { k.InstanceID, _ = d.String(v, f("instance_id")) },
		"start_offset":       func(v *yaml.Node) { s, _ := d.String(v, f("start_offset")); k.StartOffset = StartOffset(s) },
		"max_uncommitted":    func(v *yaml.Node) { k.MaxUncommitted, _ = d.DefaultedSize(v, f("max_uncommitted")) },
		"commit_interval":    func(v *yaml.Node) { k.CommitInterval, _ = d.Duration(v, f("commit_interval")) },
		"min_bytes":          func(v *yaml.Node) { k.MinBytes, _ = d.DefaultedSize(v, f("min_bytes")) },
		"max_bytes":          func(v *yaml.Node) { k.MaxBytes, _ = d.DefaultedSize(v, f("max_bytes")) },
		"max_wait":           func(v *yaml.Node) { k.MaxWait, _ = d.Duration(v, f("max_wait")) },
		"session_timeout":    func(v *yaml.Node) { k.SessionTimeout, _ = d.Duration(v, f("session_timeout")) },
		"heartbeat_interval": func(v *yaml.Node) { k.HeartbeatInterval, _ = d.Duration(v, f("heartbeat_interval")) },
		"rebalance_timeout":  func(v *yaml.Node) { k.RebalanceTimeout, _ = d.Duration(v, f("rebalance_timeout")) },
	}))
}

// SetDefaults fills the input's unset settings.
func (k *InputConfig) SetDefaults() {
	if k.StartOffset == "" {
		k.StartOffset = "earliest"
	}
	if k.Assignor == "" {
		k.Assignor = DefaultAssignor
	}
	if k.ClientID == "" {
		k.ClientID = DefaultClientID
	}
	if k.MaxUncommitted == 0 {
		k.MaxUncommitted = DefaultMaxUncommitted
	}
	if k.CommitInterval == 0 && !k.At.Given("commit_interval") {
		k.CommitInterval = DefaultCommitInterval
	}
	for _, d := range inputDurations(k) {
		// Given as 0, it stays 0: Validate refuses it.
		if *d.v == 0 && !k.At.Given(d.key) {
			*d.v = d.def
		}
	}
	if k.MinBytes == 0 {
		k.MinBytes = DefaultMinBytes
	}
	if k.MaxBytes == 0 {
		k.MaxBytes = DefaultMaxBytes
	}
}

// inputDurations are the input's durations that take a default.
func inputDurations(k *InputConfig) []struct {
	key string
	v   *time.Duration
	def time.Duration
} {
	return []struct {
		key string
		v   *time.Duration
		def time.Duration
	}{
		{"session_timeout", &k.SessionTimeout, DefaultSessionTimeout},
		{"heartbeat_interval", &k.HeartbeatInterval, DefaultHeartbeatInterval},
		{"rebalance_timeout", &k.RebalanceTimeout, DefaultRebalanceTimeout},
		{"max_wait", &k.MaxWait, DefaultMaxWait},
	}
}

// NamePart is what the input's default name shows: its topics.
func (k *InputConfig) NamePart() string { return strings.Join(k.Topics, ",") }

// Validate checks the input's kafka block; s is the input's scope.
func (k *InputConfig) Validate(s config.Scope) {
	if !s.Given("kafka") && len(k.Brokers) == 0 {
		s.Errorf("kafka", "required for a kafka input (brokers, topics, group)")
		return
	}
	ks := s.In(&k.At, "kafka")
	k.validate(ks)
	ks.Require("topics", len(k.Topics) > 0, "the topics to consume")
	ks.Require("group", k.Group != "", "the consumer group that shares the partitions")
	ks.Check("start_offset", k.StartOffset.Validate())
	ks.Check("assignor", k.Assignor.Validate())
	if k.CommitInterval <= 0 {
		ks.Errorf("commit_interval", "must be more than 0")
	}
	for _, d := range inputDurations(k) {
		ks.NotZero(d.key, *d.v == 0, "a duration such as 10s", d.def)
	}
}

// Keys is the output's "kafka" key.
func (k *OutputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return config.Keys{"kafka": func(v *yaml.Node) { k.decode(d, v, config.Field(field, "kafka")) }}
}

func (k *OutputConfig) decode(d *config.Decoder, v *yaml.Node, field string) {
	f := func(key string) string { return config.Field(field, key) }
	dir := filepath.Dir(d.File)
	d.Mapping(v, field, &k.At, k.connKeys(d, field, config.Keys{
		"topic":            func(v *yaml.Node) { k.Topic, _ = d.String(v, f("topic")) },
		"topic_field":      func(v *yaml.Node) { k.TopicField, _ = d.String(v, f("topic_field")) },
		"key_field":        func(v *yaml.Node) { k.KeyField, _ = d.String(v, f("key_field")) },
		"batch_size":       func(v *yaml.Node) { k.BatchSize, _ = d.Size(v, f("batch_size")) },
		"batch_bytes":      func(v *yaml.Node) { k.BatchBytes, _ = d.Size(v, f("batch_bytes")) },
		"compression":      func(v *yaml.Node) { s, _ := d.String(v, f("compression")); k.Compression = Compression(s) },
		"required_acks":    func(v *yaml.Node) { s, _ := d.String(v, f("required_acks")); k.RequiredAcks = RequiredAcks(s) },
		"max_attempts":     func(v *yaml.Node) { k.MaxAttempts, _ = d.Size(v, f("max_attempts")) },
		"backoff_min":      func(v *yaml.Node) { k.BackoffMin, _ = d.Duration(v, f("backoff_min")) },
		"backoff_max":      func(v *yaml.Node) { k.BackoffMax, _ = d.Duration(v, f("backoff_max")) },
		"in_flight":        func(v *yaml.Node) { k.InFlight, _ = d.Size(v, f("in_flight")) },
		"linger":           func(v *yaml.Node) { k.Linger, _ = d.Duration(v, f("linger")) },
		"create_topic":     func(v *yaml.Node) { k.CreateTopic = decodeTopicSpec(d, v, f("create_topic")) },
		"transactional_id": func(v *yaml.Node) { k.TransactionalID, _ = d.String(v, f("transactional_id")) },
		"transaction_timeout": func(v *yaml.Node) {
			k.TransactionTimeout, _ = d.Duration(v, f("transaction_timeout"))
		},
		"dead_letter": func(v *yaml.Node) {
			k.DeadLetter, _ = d.String(v, f("dead_letter"))
			if !strings.HasPrefix(k.DeadLetter, "kafka:") {
				k.DeadLetter = enrichd.ResolvePath(dir, k.DeadLetter)
			}
		},
	}))
}

// decodeTopicSpec reads create_topic: true (the brokers' defaults), false,
// or {partitions: N, replication_factor: R}.
func decodeTopicSpec(d *config.Decoder, v *yaml.Node, field string) *TopicSpec {
	spec := &TopicSpec{Partitions: -1, ReplicationFactor: -1}
	if v.Kind == yaml.ScalarNode {
		if on, _ := d.Bool(v, field); !on {
			return nil
		}
		return spec
	}
	d.Mapping(v, field, &spec.At, config.Keys{
		"partitions":         func(v *yaml.Node) { spec.Partitions, _ = d.Size(v, config.Field(field, "partitions")) },
		"replication_factor": func(v *yaml.Node) { spec.ReplicationFactor, _ = d.Size(v, config.Field(field, "replication_factor")) },
	})
	return spec
}

// SetDefaults fills the output's unset settings.
func (k *OutputConfig) SetDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&k.BatchSize, DefaultBatchSize)
	def(&k.BatchBytes, DefaultBatchBytes)
	def(&k.InFlight, DefaultInFlight)
	if k.Compression == "" {
		k.Compression = "none"
	}
	if k.RequiredAcks == "" {
		k.RequiredAcks = "all"
	}
	if k.Linger == 0 && !k.At.Given("linger") {
		k.Linger = DefaultLinger
	}
	if k.BackoffMin == 0 && !k.At.Given("backoff_min") {
		k.BackoffMin = DefaultBackoffMin
	}
	if k.BackoffMax == 0 && !k.At.Given("backoff_max") {
		k.BackoffMax = max(DefaultBackoffMax, k.BackoffMin)
	}
	if k.TransactionalID == "" {
		k.TransactionalID = DefaultTransactionalID
	}
	if k.ClientID == "" {
		k.ClientID = DefaultClientID
	}
	if k.TransactionTimeout == 0 {
		k.TransactionTimeout = DefaultTransactionTimeout
	}
	if k.MaxAttempts == 0 && k.DeadLetter != "" {
		// Without a dead letter an event is never given up on.
		k.MaxAttempts = DefaultMaxAttempts
	}
}

// EventFields are the event fields the output sends by: its messages'
// key and topic.
func (k *OutputConfig) EventFields() []string { return []string{k.KeyField, k.TopicField} }

// NamePart is what the output's default name shows: its topic.
func (k *OutputConfig) NamePart() string { return k.Topic }

// Validate checks the output's kafka block; s is the output's scope.
func (k *OutputConfig) Validate(s config.Scope) {
	if !s.Given("kafka") && len(k.Brokers) == 0 {
		s.Errorf("kafka", "required for a kafka output (brokers, topic)")
		return
	}
	ks := s.In(&k.At, "kafka")
	k.validate(ks)
	ks.Require("topic", k.Topic != "", "with topic_field, the topic of events without that field")
	for _, key := range []string{"topic_field", "key_field"} {
		name := k.TopicField
		if key == "key_field" {
			name = k.KeyField
		}
		if name != "" {
			ks.Check(key, engine.CheckField(name))
		}
	}
	ks.Check("compression", k.Compression.Validate())
	ks.Check("required_acks", k.RequiredAcks.Validate())
	if k.DeadLetter == "kafka:" {
		ks.Errorf("dead_letter", "want a file path or kafka:TOPIC")
	}
	if k.DeadLetter == "" && k.MaxAttempts > 0 {
		ks.Errorf("max_attempts", "needs dead_letter: an event that fails max_attempts times goes there (without one, enrichd retries until the brokers take it)")
	}
	if k.Linger < 0 || k.Linger > MaxLinger {
		ks.Errorf("linger", "must be from 0 to 1m")
	}
	if k.BackoffMax != 0 && k.BackoffMin > k.BackoffMax {
		ks.Errorf("backoff_min", "is more than backoff_max")
	}
}

// CheckDelivery refuses, with delivery: exactly_once, the settings a
// transactional producer cannot honour: a dead letter and max_attempts
// (an event the producer gives up on aborts the transaction, which is
// then done again; it is never set aside), and required_acks other than
// all (transactions need the idempotent producer, which writes to every
// in-sync replica).
func (k *OutputConfig) CheckDelivery(s config.Scope, g enrichd.Guarantee) {
	ks := s.In(&k.At, "kafka")
	if g != enrichd.ExactlyOnce {
		for _, key := range []string{"transactional_id", "transaction_timeout"} {
			if ks.Given(key) {
				ks.Errorf(key, "applies to pipeline.delivery: exactly_once only")
			}
		}
		return
	}
	if k.DeadLetter != "" {
		ks.Errorf("dead_letter", "not with pipeline.delivery: exactly_once: an event not produced aborts its transaction, which is done again")
	}
	if ks.Given("max_attempts") {
		ks.Errorf("max_attempts", "not with pipeline.delivery: exactly_once: the producer retries until the transaction commits or aborts")
	}
	if k.RequiredAcks != "all" {
		ks.Errorf("required_acks", "must be all with pipeline.delivery: exactly_once (a transactional producer is idempotent)")
	}
	if k.TransactionTimeout < time.Second {
		ks.Errorf("transaction_timeout", "must be 1s or more")
	}
}
