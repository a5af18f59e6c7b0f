package listen

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// Client certificate refusals, told apart by errors.Is.
var (
	errNoClientCert  = errors.New("the client sent no certificate")
	errBadClientCert = errors.New("the client certificate is not signed by client_ca_file")
	errNotAllowed    = errors.New("the client certificate is not in allowed_clients")
)

// recheckEvery is how often, at most, the files are looked at for a
// change (on new connections).
const recheckEvery = time.Second

// fileStamp is what tells a file changed.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{st.ModTime(), st.Size()}
}

// certs holds a listener's TLS configuration, built again from its files
// when they change or on Reload. A failed reload (a half-written pair, a
// missing file) keeps the previous configuration, and is logged.
type certs struct {
	opts TLS
	log  *slog.Logger
	minV uint16

	mu        sync.Mutex
	cfg       *tls.Config // the configuration of new connections
	pool      *x509.CertPool
	stamps    [3]fileStamp
	lastCheck time.Time
	loads     uint64 // successful loads, the first included
	failures  uint64 // reloads that failed
}

func newCerts(opts TLS, log *slog.Logger) (*certs, error) {
	opts.SetDefaults()
	v, err := tlsVersion(opts.MinVersion)
	if err != nil {
		return nil, err
	}
	c := &certs{opts: opts, log: log, minV: v}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certs) files() [3]string {
	return [3]string{c.opts.CertFile, c.opts.KeyFile, c.opts.ClientCAFile}
}

// load reads the files and builds the configuration of new connections.
func (c *certs) load() error {
	var st [3]fileStamp
	for i, f := range c.files() {
		if f != "" {
			st[i] = stamp(f)
		}
	}
	pair, err := tls.LoadX509KeyPair(c.opts.CertFile, c.opts.KeyFile)
	if err != nil {
		return err
	}
	var pool *x509.CertPool
	if c.opts.ClientCAFile != "" {
		if pool, err = loadPool(c.opts.ClientCAFile); err != nil {
			return err
		}
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   c.minV,
		// HTTP/2 is not offered: the HTTP server's limits are HTTP/1.1's.
		NextProtos: []string{"http/1.1"},
	}
	if pool != nil {
		// The certificate is asked for but checked here, so that a
		// missing one, a wrong one and one not allowed are told apart.
		cfg.ClientAuth = tls.RequestClientCert
		cfg.ClientCAs = pool
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return c.verifyClient(pool, cs) }
	}
	c.mu.Lock()
	c.cfg, c.pool, c.stamps = cfg, pool, st
	c.loads++
	c.mu.Unlock()
	return nil
}

// config returns the configuration for a new connection, reading the
// files again first when they changed.
func (c *certs) config() *tls.Config {
	c.mu.Lock()
	now := time.Now()
	check := now.Sub(c.lastCheck) >= recheckEvery
	if check {
		c.lastCheck = now
	}
	changed := false
	if check {
		for i, f := range c.files() {
			if f != "" && stamp(f) != c.stamps[i] {
				changed = true
			}
		}
	}
	c.mu.Unlock()
	if changed {
		c.reload("files changed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

// reload reads the files again; on failure the previous configuration
// stays.
func (c *certs) reload(why string) {
	if err := c.load(); err != nil {
		// The files are tried again at the next check (a second later, on
		// a new connection), until a load succeeds: a pair read while
		// half written is not kept for good.
		c.mu.Lock()
		c.failures++
		c.mu.Unlock()
		c.log.Error("TLS certificate reload failed; the previous certificate stays", "reason", why, "cert_file", c.opts.CertFile, "err", err)
		return
	}
	c.log.Info("TLS certificate loaded", "reason", why, "cert_file", c.opts.CertFile)
}

func (c *certs) counts() (loads, failures uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads, c.failures
}

// verifyClient checks the client's certificate against the CA bundle and
// the allow-list.
func (c *certs) verifyClient(pool *x509.CertPool, cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		if c.opts.ClientAuth == ClientAuthOptional {
			return nil
		}
		return errNoClientCert
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, ic := range cs.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("%w: %w", errBadClientCert, err)
	}
	if len(c.opts.AllowedClients) > 0 && !Allowed(leaf, c.opts.AllowedClients) {
		return fmt.Errorf("%w: %s", errNotAllowed, leaf.Subject.String())
	}
	return nil
}

// Allowed reports whether a name of the certificate is in the list: its
// subject ("CN=sender,O=Example"), its common name, or one of its DNS,
// email, URI or IP subject alternative names.
func Allowed(cert *x509.Certificate, list []string) bool {
	names := []string{cert.Subject.String(), cert.Subject.CommonName}
	names = append(names, cert.DNSNames...)
	names = append(names, cert.EmailAddresses...)
	for _, u := range cert.URIs {
		names = append(names, u.String())
	}
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	for _, n := range names {
		if n != "" && slices.Contains(list, n) {
			return true
		}
	}
	return false
}

// loadPool reads a PEM bundle of CA certificates.
func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) || !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func tlsVersion(s string) (uint16, error) {
	switch s {
	case "1.2", "":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf(`must be "1.2" or "1.3", not %q (TLS 1.0 and 1.1 are not offered)`, s)
}
