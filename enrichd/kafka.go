package enrichd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	saslplain "github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Kafka inputs (kafka_input.go: a member of a consumer group,
// kafka_group.go, that fetches its partitions, kafka_fetch.go) and outputs
// (kafka_output.go); this file has the connection settings they share.
//
// Delivery is at least once. A Kafka input notes, for each batch, the
// last offset it holds of each partition, in an ackEntry: the batch's
// acknowledgement (Ack), which goes with the batch to a worker and with
// the worker's output buffer to the outputs. It is done when every output
// has delivered the events: the stream outputs (stdout, file, tcp) once
// they have flushed them, a Kafka output once the brokers acknowledged
// them (or, after max_attempts, the dead letter took them). The
// commitTracker (kafka_commit.go) keeps the entries in the order the input
// made them; when the oldest are done, their offsets become committable,
// whenever that is (a produce retried long after the fetch, the brokers
// back from an outage), and the committer commits them every
// commit_interval, retrying a failed commit with backoff, and once more,
// until the shutdown deadline, on SIGTERM. So a committed offset never
// passes an event that is not delivered, and a crash makes the group read
// again at most the events fetched and not yet committed, which
// max_uncommitted bounds: the input stops fetching while that many are
// outstanding.

// probeKafka connects to the brokers once, so that settings that can
// never work (a wrong password, an untrusted certificate) stop the start
// with a clear error. Brokers that cannot be reached are only logged: the
// clients keep trying, and a node must be able to start while a broker is
// down.
func probeKafka(c KafkaConn, log *slog.Logger) error {
	dialer, err := kafkaDialer(c)
	if err != nil {
		return err
	}
	dialer.Timeout = 5 * time.Second
	var errs []error
	for _, b := range c.Brokers {
		conn, err := dialer.Dial("tcp", b)
		if err == nil {
			conn.Close()
			return nil
		}
		var ke kafka.Error
		var ce *tls.CertificateVerificationError
		var ue x509.UnknownAuthorityError
		var he x509.HostnameError
		if errors.As(err, &ke) && (ke == kafka.SASLAuthenticationFailed || ke == kafka.UnsupportedSASLMechanism || ke == kafka.IllegalSASLState) ||
			errors.As(err, &ce) || errors.As(err, &ue) || errors.As(err, &he) {
			return fmt.Errorf("broker %s: %w", b, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", b, err))
	}
	log.Warn("no Kafka broker reachable yet; retrying in the background", "err", errors.Join(errs...))
	return nil
}

func kafkaTLS(c *TLSConfig) (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	tc := &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", c.CAFile)
		}
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func kafkaSASL(c *SASLConfig) (sasl.Mechanism, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Mechanism {
	case "plain":
		return saslplain.Mechanism{Username: c.Username, Password: c.Password}, nil
	case "scram-sha-256":
		return scram.Mechanism(scram.SHA256, c.Username, c.Password)
	case "scram-sha-512":
		return scram.Mechanism(scram.SHA512, c.Username, c.Password)
	}
	return nil, fmt.Errorf("sasl: unknown mechanism %q", c.Mechanism)
}

// kafkaSecurity returns the TLS configuration and SASL mechanism of c
// (nil when not configured).
func kafkaSecurity(c KafkaConn) (*tls.Config, sasl.Mechanism, error) {
	tc, err := kafkaTLS(c.TLS)
	if err != nil {
		return nil, nil, err
	}
	mech, err := kafkaSASL(c.SASL)
	return tc, mech, err
}

func kafkaDialer(c KafkaConn) (*kafka.Dialer, error) {
	tc, mech, err := kafkaSecurity(c)
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{ClientID: clientID(c), Timeout: 10 * time.Second, DualStack: true, TLS: tc, SASLMechanism: mech}, nil
}

func kafkaTransport(c KafkaConn) (*kafka.Transport, error) {
	tc, mech, err := kafkaSecurity(c)
	if err != nil {
		return nil, err
	}
	return &kafka.Transport{ClientID: clientID(c), TLS: tc, SASL: mech, DialTimeout: 10 * time.Second}, nil
}

func clientID(c KafkaConn) string {
	if c.ClientID != "" {
		return c.ClientID
	}
	return "enrichd"
}

func kafkaCompression(s Compression) kafka.Compression {
	switch s {
	case "gzip":
		return kafka.Gzip
	case "snappy":
		return kafka.Snappy
	case "lz4":
		return kafka.Lz4
	case "zstd":
		return kafka.Zstd
	}
	return 0
}

// kafkaRequestTimeout bounds a request to the brokers that should be
// answered at once (a commit, a heartbeat, an offset listing).
const kafkaRequestTimeout = 5 * time.Second

// backoff is an exponential backoff from min to max.
type backoff struct{ min, max, cur time.Duration }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }

// streak logs a recurring failure when it begins and then at most every
// 30 s, and says when it ends, so that an outage does not flood the log.
type streak struct {
	mu       sync.Mutex
	n        int
	began    time.Time
	reported time.Time
}

func (s *streak) fail(log *slog.Logger, msg string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.n == 0 {
		s.began = now
	}
	s.n++
	if s.n == 1 || now.Sub(s.reported) >= 30*time.Second {
		s.reported = now
		log.Warn(msg, append(args, "failures", s.n, "since", s.began.Format(time.RFC3339))...)
	}
}

func (s *streak) ok(log *slog.Logger, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n > 0 {
		log.Info(msg, "failures", s.n, "after", time.Since(s.began).Round(time.Millisecond).String())
		s.n = 0
	}
}

// connRetries is how many times a request that failed on a broken
// connection is sent again at once. kafka-go's transport keeps the idle
// connections the brokers closed (after an outage, every one it had) and
// finds out on the next request sent on each, which fails; sending it
// again takes another connection, or opens a new one.
const connRetries = 8

// isConnError reports whether err is a connection the peer closed (not an
// answer of the brokers, nor a broker that refuses connections).
func isConnError(err error) bool {
	var ke kafka.Error
	if err == nil || errors.As(err, &ke) {
		return false
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// retryConn calls fn, again at once while it fails on a broken connection
// (connRetries times at most, and while ctx lasts).
func retryConn(ctx context.Context, fn func() error) error {
	err := fn()
	for i := 0; i < connRetries && isConnError(err) && ctx.Err() == nil; i++ {
		err = fn()
	}
	return err
}
