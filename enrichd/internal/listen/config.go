package listen

import (
	"crypto/tls"
	"log/slog"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

// Defaults of the limits: block.
const (
	// DefaultHandshakeTimeout bounds a TLS handshake; a client that has
	// not finished it by then is closed and counted.
	DefaultHandshakeTimeout = 10 * time.Second
)

// TLS is a listener's tls: block. A listener without cert_file speaks
// plaintext.
type TLS struct {
	At       config.At
	CertFile string // PEM certificate chain, the server's first
	KeyFile  string // PEM private key of the certificate
	// ClientCAFile, when set, requires clients to present a certificate
	// signed by one of these CAs (mTLS).
	ClientCAFile string
	// AllowedClients, when set (with ClientCAFile), lists the client
	// certificates accepted: each entry is matched against the subject
	// (as "CN=sender,O=Example"), the common name, and the DNS, email,
	// URI and IP subject alternative names.
	AllowedClients []string
	// ClientAuth, with ClientCAFile, is "required" (default: a client
	// without a certificate is refused) or "optional" (a client may come
	// without one, as to an HTTP API that also takes a bearer token; one it
	// sends must still be valid).
	ClientAuth string
	// MinVersion is the lowest TLS version accepted: "1.2" (default) or
	// "1.3".
	MinVersion string
}

// Client authentication modes.
const (
	ClientAuthRequired = "required"
	ClientAuthOptional = "optional"
)

// Enabled reports whether the listener speaks TLS.
func (t *TLS) Enabled() bool { return t != nil && t.CertFile != "" }

// Decode reads a tls: block (field is its path); relative paths are
// anchored at the configuration's directory.
func (t *TLS) Decode(d *config.Decoder, n *yaml.Node, field string) {
	dir := filepath.Dir(d.File)
	f := func(k string) string { return config.Field(field, k) }
	path := func(dst *string, k string) func(v *yaml.Node) {
		return func(v *yaml.Node) {
			if p, ok := d.String(v, f(k)); ok && p != "" && !filepath.IsAbs(p) {
				*dst = filepath.Join(dir, p)
			} else {
				*dst = p
			}
		}
	}
	d.Mapping(n, field, &t.At, config.Keys{
		"cert_file":       path(&t.CertFile, "cert_file"),
		"key_file":        path(&t.KeyFile, "key_file"),
		"client_ca_file":  path(&t.ClientCAFile, "client_ca_file"),
		"allowed_clients": func(v *yaml.Node) { t.AllowedClients, _ = d.Strings(v, f("allowed_clients")) },
		"min_version":     func(v *yaml.Node) { t.MinVersion, _ = d.String(v, f("min_version")) },
		"client_auth":     func(v *yaml.Node) { t.ClientAuth, _ = d.String(v, f("client_auth")) },
	})
}

// SetDefaults fills what is not set.
func (t *TLS) SetDefaults() {
	if t.MinVersion == "" {
		t.MinVersion = "1.2"
	}
	if t.ClientAuth == "" {
		t.ClientAuth = ClientAuthRequired
	}
}

// Validate checks the block (s is its scope): the files are read and the
// pair checked, so that a daemon that starts is one that can handshake.
func (t *TLS) Validate(s config.Scope) {
	if t.CertFile == "" && t.KeyFile == "" && t.ClientCAFile == "" && len(t.AllowedClients) == 0 && !s.Given("min_version") && !s.Given("client_auth") {
		return
	}
	s.Require("cert_file", t.CertFile != "", "the server's PEM certificate (chain)")
	s.Require("key_file", t.KeyFile != "", "the PEM private key of cert_file")
	if t.CertFile != "" && t.KeyFile != "" {
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			s.Errorf("cert_file", "%v", err)
		}
	}
	if t.ClientCAFile != "" {
		if _, err := loadPool(t.ClientCAFile); err != nil {
			s.Errorf("client_ca_file", "%v", err)
		}
	}
	if len(t.AllowedClients) > 0 && t.ClientCAFile == "" {
		s.Errorf("allowed_clients", "needs client_ca_file (the CA bundle that signs the client certificates)")
	}
	for _, a := range t.AllowedClients {
		if a == "" {
			s.Errorf("allowed_clients", "an empty name matches nothing")
		}
	}
	s.Check("client_auth", config.OneOf(t.ClientAuth, ClientAuthRequired, ClientAuthOptional))
	if s.Given("client_auth") && t.ClientCAFile == "" {
		s.Errorf("client_auth", "needs client_ca_file")
	}
	if _, err := tlsVersion(t.MinVersion); err != nil {
		s.Errorf("min_version", "%v", err)
	}
}

// Limits is a listener's limits: block.
type Limits struct {
	At config.At
	// MaxConnections caps the connections open at once; more are closed
	// at once and counted (reason max_connections).
	MaxConnections int
	// MaxConnectionsPerSource caps the connections open at once from one
	// IP address (0: no cap beyond MaxConnections).
	MaxConnectionsPerSource int
	// IdleTimeout closes a connection silent this long (0: never).
	IdleTimeout time.Duration
	// HandshakeTimeout bounds a TLS handshake (default 10s).
	HandshakeTimeout time.Duration
}

// Decode reads a limits: block (field is its path).
func (l *Limits) Decode(d *config.Decoder, n *yaml.Node, field string) {
	d.Mapping(n, field, &l.At, l.Keys(d, field))
}

// Keys are the limits' keys, for a block of their own or, for the keys an
// older configuration gave flat (max_connections, idle_timeout), in the
// listener's own mapping.
func (l *Limits) Keys(d *config.Decoder, field string) config.Keys {
	f := func(k string) string { return config.Field(field, k) }
	return config.Keys{
		"max_connections":            func(v *yaml.Node) { l.MaxConnections, _ = d.DefaultedSize(v, f("max_connections")) },
		"max_connections_per_source": func(v *yaml.Node) { l.MaxConnectionsPerSource, _ = d.Int(v, f("max_connections_per_source")) },
		"idle_timeout":               func(v *yaml.Node) { l.IdleTimeout, _ = d.Duration(v, f("idle_timeout")) },
		"handshake_timeout":          func(v *yaml.Node) { l.HandshakeTimeout, _ = d.Duration(v, f("handshake_timeout")) },
	}
}

// SetDefaults fills what is not set; maxConns is the listener's default
// cap. A handshake_timeout given as 0 stays 0, for Validate to refuse
// (max_connections: 0 is refused as it is read).
func (l *Limits) SetDefaults(maxConns int) {
	if l.MaxConnections == 0 {
		l.MaxConnections = maxConns
	}
	if l.HandshakeTimeout == 0 && !l.At.Given("handshake_timeout") {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
}

// Validate checks the block (s is its scope).
func (l *Limits) Validate(s config.Scope) {
	if l.MaxConnections <= 0 {
		s.Errorf("max_connections", "must be a positive integer, not %d", l.MaxConnections)
	}
	if l.MaxConnectionsPerSource < 0 {
		s.Errorf("max_connections_per_source", "must be 0 (no cap) or more, not %d", l.MaxConnectionsPerSource)
	}
	if l.IdleTimeout < 0 {
		s.Errorf("idle_timeout", "must not be negative")
	}
	s.NotZero("handshake_timeout", l.HandshakeTimeout == 0, "a duration such as 10s", DefaultHandshakeTimeout)
	if l.HandshakeTimeout < 0 {
		s.Errorf("handshake_timeout", "must not be negative")
	}
}

// Config is a listener's settings: its tls: and limits: blocks.
type Config struct {
	TLS    TLS
	Limits Limits
	// flat records max_connections and idle_timeout given in the
	// listener's own mapping, beside the blocks (the older form).
	flat config.At
}

// Keys are the handlers of the listener's keys in its mapping (field is
// its path): tls and limits, and, with flat, max_connections and
// idle_timeout as they were written before the limits: block.
func (c *Config) Keys(d *config.Decoder, field string, flat bool) config.Keys {
	keys := config.Keys{
		"tls":    func(v *yaml.Node) { c.TLS.Decode(d, v, config.Field(field, "tls")) },
		"limits": func(v *yaml.Node) { c.Limits.Decode(d, v, config.Field(field, "limits")) },
	}
	if flat {
		lk := c.Limits.Keys(d, field)
		for _, k := range []string{"max_connections", "idle_timeout"} {
			h := lk[k]
			keys[k] = func(v *yaml.Node) {
				c.flat.Set(k, v)
				h(v)
			}
		}
	}
	return keys
}

// SetDefaults fills what is not set; maxConns is the listener's default
// cap.
func (c *Config) SetDefaults(maxConns int) {
	c.TLS.SetDefaults()
	c.Limits.SetDefaults(maxConns)
}

// Validate checks the blocks; s is the listener's scope.
func (c *Config) Validate(s config.Scope) {
	for _, k := range []string{"max_connections", "idle_timeout"} {
		if c.flat.Given(k) && c.Limits.At.Given(k) {
			s.Errorf(k, "given here and in limits: give it once (in limits)")
		}
	}
	c.TLS.Validate(s.In(&c.TLS.At, "tls"))
	c.Limits.Validate(s.In(&c.Limits.At, "limits"))
}

// Options returns the options of a Listener named name.
func (c *Config) Options(name string, log *slog.Logger) Options {
	o := Options{Name: name, Limits: c.Limits, Log: log}
	if c.TLS.Enabled() {
		t := c.TLS
		o.TLS = &t
	}
	return o
}
