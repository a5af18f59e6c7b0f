package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	saslplain "github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// clientOpts are the options of a client of the cluster c names: its
// brokers, client id, TLS and SASL.
func clientOpts(c Conn, log *slog.Logger) ([]kgo.Opt, *authWatch, error) {
	w := &authWatch{}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(clientID(c)),
		kgo.DialTimeout(10 * time.Second),
		kgo.WithLogger(&logger{l: log}),
		kgo.WithHooks(w),
		// Requests to brokers that cannot be reached are retried after
		// 100 ms, doubling up to 1 s, so that brokers that return are
		// used within about a second (an output sets its own).
		kgo.RetryBackoffFn(backoffFn(100*time.Millisecond, time.Second)),
	}
	tc, err := tlsConfig(c.TLS)
	if err != nil {
		return nil, nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	mech, err := saslMechanism(c.SASL)
	if err != nil {
		return nil, nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, w, nil
}

func clientID(c Conn) string {
	if c.ClientID != "" {
		return c.ClientID
	}
	return DefaultClientID
}

func tlsConfig(c *TLSConfig) (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	return c.Config("")
}

func saslMechanism(c *SASLConfig) (sasl.Mechanism, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Mechanism {
	case "plain":
		return saslplain.Auth{User: c.Username, Pass: c.Password}.AsMechanism(), nil
	case "scram-sha-256":
		return scram.Auth{User: c.Username, Pass: c.Password}.AsSha256Mechanism(), nil
	case "scram-sha-512":
		return scram.Auth{User: c.Username, Pass: c.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl: unknown mechanism %q", c.Mechanism)
}

// probe asks the brokers once for their metadata, so that settings that
// can never work (a wrong password, an untrusted certificate) stop the
// start with a clear error. Brokers that cannot be reached are only
// logged: the client keeps trying, and a node must be able to start while
// a broker is down.
func probe(cl *kgo.Client, w *authWatch, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := cl.Ping(ctx)
	if err == nil {
		return nil
	}
	var ce *tls.CertificateVerificationError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState) ||
		errors.As(err, &ce) || errors.As(err, &ue) || errors.As(err, &he) {
		return fmt.Errorf("brokers %v: %w", cl.OptValue(kgo.SeedBrokers), err)
	}
	if w.refused.Load() {
		return fmt.Errorf("brokers %v: %w (the broker closed the connection at the credentials)",
			cl.OptValue(kgo.SeedBrokers), kerr.SaslAuthenticationFailed)
	}
	log.Warn("no Kafka broker reachable yet; retrying in the background", "err", err)
	return nil
}

// authWatch notes a broker that closes the connection in answer to the
// client's SASL credentials (as some do, instead of answering
// SASL_AUTHENTICATION_FAILED).
type authWatch struct{ refused atomic.Bool }

func (w *authWatch) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil && key == (&kmsg.SASLAuthenticateRequest{}).Key() {
		w.refused.Store(true)
	}
}

// requestTimeout bounds a request to the brokers that should be answered
// at once (a commit, an offset listing).
const requestTimeout = 5 * time.Second

// backoffFn is kgo's retry backoff from min, doubling up to max.
func backoffFn(lo, hi time.Duration) func(tries int) time.Duration {
	return func(tries int) time.Duration {
		d := lo
		for i := 1; i < tries && d < hi; i++ {
			d *= 2
		}
		return min(d, hi)
	}
}

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

// logger sends the client's warnings and errors to the daemon's log, at
// most one a second: an outage makes it retry, and say so, all the time.
type logger struct {
	l    *slog.Logger
	mu   sync.Mutex
	last time.Time
}

func (*logger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (g *logger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	g.mu.Lock()
	now := time.Now()
	if now.Sub(g.last) < time.Second {
		g.mu.Unlock()
		return
	}
	g.last = now
	g.mu.Unlock()
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	g.l.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}
