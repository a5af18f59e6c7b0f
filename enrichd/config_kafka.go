package enrichd

import (
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// A Kafka output retries a failed produce after DefaultKafkaBackoffMin,
// doubling the wait up to DefaultKafkaBackoffMax (backoff_min and
// backoff_max): brokers that return are used within about a second.
const (
	DefaultKafkaBackoffMin = 100 * time.Millisecond
	DefaultKafkaBackoffMax = time.Second
)

// KafkaTopicSpec is how a Kafka output creates a topic that does not
// exist (create_topic).
type KafkaTopicSpec struct {
	Partitions        int // -1: the brokers' num.partitions
	ReplicationFactor int // -1: the brokers' default.replication.factor
}

// kafkaConn parses the connection settings shared by Kafka inputs and
// outputs; it returns false when k is not one of them.
func (p *cparser) kafkaConn(k, v *yaml.Node, field string, c *KafkaConn) bool {
	switch k.Value {
	case "brokers":
		c.Brokers = p.strs(v, field+".brokers")
		for _, b := range c.Brokers {
			if !strings.Contains(b, ":") {
				p.errf(v, field+".brokers", "%q: want HOST:PORT", b)
			}
		}
	case "client_id":
		c.ClientID = p.str(v, field+".client_id")
	case "tls":
		c.TLS = &TLSConfig{}
		if v.Kind == yaml.ScalarNode {
			if !p.bool(v, field+".tls") {
				c.TLS = nil
			}
			return true
		}
		f := field + ".tls"
		p.fields(v, f, map[string]func(k, v *yaml.Node){
			"ca_file":              func(k, v *yaml.Node) { c.TLS.CAFile = p.path(v, f+".ca_file") },
			"cert_file":            func(k, v *yaml.Node) { c.TLS.CertFile = p.path(v, f+".cert_file") },
			"key_file":             func(k, v *yaml.Node) { c.TLS.KeyFile = p.path(v, f+".key_file") },
			"server_name":          func(k, v *yaml.Node) { c.TLS.ServerName = p.str(v, f+".server_name") },
			"insecure_skip_verify": func(k, v *yaml.Node) { c.TLS.InsecureSkipVerify = p.bool(v, f+".insecure_skip_verify") },
		})
		if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
			p.errf(v, f, "cert_file and key_file go together")
		}
	case "sasl":
		c.SASL = &SASLConfig{}
		f := field + ".sasl"
		p.fields(v, f, map[string]func(k, v *yaml.Node){
			"mechanism": func(k, v *yaml.Node) {
				c.SASL.Mechanism = p.enum(v, f+".mechanism", "plain", "scram-sha-256", "scram-sha-512")
			},
			"username":      func(k, v *yaml.Node) { c.SASL.Username = p.str(v, f+".username") },
			"password":      func(k, v *yaml.Node) { c.SASL.Password = p.str(v, f+".password") },
			"password_file": func(k, v *yaml.Node) { c.SASL.Password = p.token(v, f+".password_file", filepath.Dir(p.file)) },
		})
		if c.SASL.Mechanism == "" || c.SASL.Username == "" {
			p.errf(v, f, "mechanism and username are required")
		}
	default:
		return false
	}
	return true
}

// path returns a file path, relative paths anchored at the
// configuration's directory.
func (p *cparser) path(v *yaml.Node, field string) string {
	s := p.str(v, field)
	if s != "" && !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(p.file), s)
	}
	return s
}

// kafkaFields parses a mapping whose keys are either connection settings
// or those of handlers.
func (p *cparser) kafkaFields(v *yaml.Node, field string, c *KafkaConn, handlers map[string]func(k, v *yaml.Node)) {
	for _, name := range []string{"brokers", "client_id", "tls", "sasl"} {
		handlers[name] = func(k, v *yaml.Node) { p.kafkaConn(k, v, field, c) }
	}
	p.fields(v, field, handlers)
	if len(c.Brokers) == 0 {
		p.errf(v, field+".brokers", "required: the bootstrap brokers (HOST:PORT, ...)")
	}
}

func (p *cparser) kafkaInput(v *yaml.Node, field string, k *KafkaInputConfig) {
	*k = KafkaInputConfig{StartOffset: "earliest", MaxUncommitted: DefaultKafkaMaxUncommitted, CommitInterval: DefaultKafkaCommitInterval}
	p.kafkaFields(v, field, &k.KafkaConn, map[string]func(_, v *yaml.Node){
		"topics":             func(_, v *yaml.Node) { k.Topics = p.strs(v, field+".topics") },
		"topic":              func(_, v *yaml.Node) { k.Topics = p.strs(v, field+".topic") },
		"group":              func(_, v *yaml.Node) { k.Group = p.str(v, field+".group") },
		"start_offset":       func(_, v *yaml.Node) { k.StartOffset = p.enum(v, field+".start_offset", "earliest", "latest") },
		"max_uncommitted":    func(_, v *yaml.Node) { k.MaxUncommitted = p.posInt(v, field+".max_uncommitted") },
		"commit_interval":    func(_, v *yaml.Node) { k.CommitInterval = p.dur(v, field+".commit_interval") },
		"min_bytes":          func(_, v *yaml.Node) { k.MinBytes = p.posInt(v, field+".min_bytes") },
		"max_bytes":          func(_, v *yaml.Node) { k.MaxBytes = p.posInt(v, field+".max_bytes") },
		"max_wait":           func(_, v *yaml.Node) { k.MaxWait = p.dur(v, field+".max_wait") },
		"session_timeout":    func(_, v *yaml.Node) { k.SessionTimeout = p.dur(v, field+".session_timeout") },
		"heartbeat_interval": func(_, v *yaml.Node) { k.HeartbeatInterval = p.dur(v, field+".heartbeat_interval") },
		"rebalance_timeout":  func(_, v *yaml.Node) { k.RebalanceTimeout = p.dur(v, field+".rebalance_timeout") },
	})
	if len(k.Topics) == 0 {
		p.errf(v, field+".topics", "required: the topics to consume")
	}
	if k.Group == "" {
		p.errf(v, field+".group", "required: the consumer group that shares the partitions")
	}
	if k.CommitInterval == 0 {
		p.errf(v, field+".commit_interval", "must be more than 0")
	}
}

func (p *cparser) kafkaOutput(v *yaml.Node, field string, k *KafkaOutputConfig) {
	*k = KafkaOutputConfig{
		BatchSize: DefaultKafkaBatchSize, BatchBytes: DefaultKafkaBatchBytes,
		Compression: "none", RequiredAcks: "all", MaxAttempts: DefaultKafkaMaxAttempts, InFlight: DefaultKafkaInFlight,
	}
	maxAttemptsSet := false
	p.kafkaFields(v, field, &k.KafkaConn, map[string]func(_, v *yaml.Node){
		"topic":       func(_, v *yaml.Node) { k.Topic = p.str(v, field+".topic") },
		"topic_field": func(_, v *yaml.Node) { k.TopicField = p.fieldName(v, field+".topic_field") },
		"key_field":   func(_, v *yaml.Node) { k.KeyField = p.fieldName(v, field+".key_field") },
		"batch_size":  func(_, v *yaml.Node) { k.BatchSize = p.posInt(v, field+".batch_size") },
		"batch_bytes": func(_, v *yaml.Node) { k.BatchBytes = p.posInt(v, field+".batch_bytes") },
		"compression": func(_, v *yaml.Node) {
			k.Compression = p.enum(v, field+".compression", "none", "gzip", "snappy", "lz4", "zstd")
		},
		"required_acks": func(_, v *yaml.Node) { k.RequiredAcks = p.enum(v, field+".required_acks", "all", "one", "none") },
		"max_attempts": func(_, v *yaml.Node) {
			maxAttemptsSet = true
			k.MaxAttempts = p.posInt(v, field+".max_attempts")
		},
		"backoff_min":  func(_, v *yaml.Node) { k.BackoffMin = p.dur(v, field+".backoff_min") },
		"backoff_max":  func(_, v *yaml.Node) { k.BackoffMax = p.dur(v, field+".backoff_max") },
		"in_flight":    func(_, v *yaml.Node) { k.InFlight = p.posInt(v, field+".in_flight") },
		"create_topic": func(_, v *yaml.Node) { k.CreateTopic = p.topicSpec(v, field+".create_topic") },
		"dead_letter": func(_, v *yaml.Node) {
			k.DeadLetter = p.str(v, field+".dead_letter")
			if k.DeadLetter == "kafka:" {
				p.errf(v, field+".dead_letter", "want a file path or kafka:TOPIC")
			}
		},
	})
	if k.Topic == "" {
		p.errf(v, field+".topic", "required (with topic_field, the topic of events without that field)")
	}
	if k.DeadLetter == "" && !maxAttemptsSet {
		// Without a dead letter an event is never given up on.
		k.MaxAttempts = 0
	}
	if k.DeadLetter == "" && maxAttemptsSet {
		p.errf(v, field+".max_attempts", "needs dead_letter: an event that fails max_attempts times goes there (without one, enrichd retries until the brokers take it)")
	}
	if k.BackoffMax != 0 && k.BackoffMin > k.BackoffMax {
		p.errf(v, field+".backoff_min", "is more than backoff_max")
	}
}

// topicSpec parses create_topic: true (the brokers' defaults), false, or
// {partitions: N, replication_factor: R}.
func (p *cparser) topicSpec(v *yaml.Node, field string) *KafkaTopicSpec {
	spec := &KafkaTopicSpec{Partitions: -1, ReplicationFactor: -1}
	if v.Kind == yaml.ScalarNode {
		if !p.bool(v, field) {
			return nil
		}
		return spec
	}
	p.fields(v, field, map[string]func(k, v *yaml.Node){
		"partitions":         func(_, v *yaml.Node) { spec.Partitions = p.posInt(v, field+".partitions") },
		"replication_factor": func(_, v *yaml.Node) { spec.ReplicationFactor = p.posInt(v, field+".replication_factor") },
	})
	return spec
}

// fieldName checks an event field name (as in a rule's field).
func (p *cparser) fieldName(v *yaml.Node, field string) string {
	s := p.str(v, field)
	if s == "" {
		return ""
	}
	if _, err := parseFieldRef(s); err != nil {
		p.errf(v, field, "%v", err)
	}
	return s
}
