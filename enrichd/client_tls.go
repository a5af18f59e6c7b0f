package enrichd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

// ClientTLS is TLS from enrichd to a server it connects to (a relp
// output's receiver, a Kafka client's brokers): the CAs the server's
// certificate must be signed by, the name it must carry, and the client
// certificate the server may ask for.
type ClientTLS struct {
	At                 config.At
	CAFile             string // PEM bundle of the CAs to trust; "" for the system pool
	CertFile, KeyFile  string // client certificate
	ServerName         string // "": the host connected to
	InsecureSkipVerify bool   // only where the type offers the key (Kafka)
}

// ClientTLSKey returns the decoder of a `tls:` key at field into *dst:
// true or false (TLS with the defaults, or none), or a mapping of
// ca_file, cert_file, key_file and server_name (files relative to the
// configuration's directory), and insecure_skip_verify when insecure is
// set.
func ClientTLSKey(d *config.Decoder, field string, dst **ClientTLS, insecure bool) func(v *yaml.Node) {
	return func(v *yaml.Node) {
		*dst = &ClientTLS{}
		if v.Kind == yaml.ScalarNode {
			if on, _ := d.Bool(v, field); !on {
				*dst = nil
			}
			return
		}
		t := *dst
		path := func(key string, p *string) func(v *yaml.Node) {
			return func(v *yaml.Node) {
				s, _ := d.String(v, config.Field(field, key))
				*p = resolve(dirOf(d), s)
			}
		}
		keys := config.Keys{
			"ca_file":     path("ca_file", &t.CAFile),
			"cert_file":   path("cert_file", &t.CertFile),
			"key_file":    path("key_file", &t.KeyFile),
			"server_name": func(v *yaml.Node) { t.ServerName, _ = d.String(v, config.Field(field, "server_name")) },
		}
		if insecure {
			keys["insecure_skip_verify"] = func(v *yaml.Node) {
				t.InsecureSkipVerify, _ = d.Bool(v, config.Field(field, "insecure_skip_verify"))
			}
		}
		d.Mapping(v, field, &t.At, keys)
	}
}

// Validate checks the settings; s is the scope of the key that holds
// them.
func (t *ClientTLS) Validate(s config.Scope) {
	if t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		s.In(&t.At, "tls").Errorf("", "cert_file and key_file go together")
	}
}

// Config loads the files into a TLS client configuration; host is the
// name the server must carry when server_name is not given ("" leaves it
// to the dialer).
func (t *ClientTLS) Config(host string) (*tls.Config, error) {
	tc := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
