package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Secure is a cluster that requires TLS and SASL.
type Secure struct {
	*Cluster
	CAFile     string // PEM of the CA that signed the brokers' certificate
	User, Pass string
	Mechanism  string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
}

// StartSecure starts a cluster whose listeners speak TLS with a
// certificate for 127.0.0.1 signed by a fresh CA (written to the test's
// temporary directory) and require SASL with mechanism, as user "enrichd".
func StartSecure(t testing.TB, mechanism string, brokers int, partitions int32, topics ...string) *Secure {
	t.Helper()
	s := &Secure{User: "enrichd", Pass: "s3cret-" + mechanism, Mechanism: mechanism}
	serverTLS, caPEM := selfSigned(t)
	s.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.CAFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	lns := &listeners{}
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...),
		kfake.TLS(serverTLS), kfake.EnableSASL(), kfake.Superuser(mechanism, s.User, s.Pass), kfake.ListenFn(lns.listen))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	var mech kgo.Opt
	switch mechanism {
	case "PLAIN":
		mech = kgo.SASL(plain.Auth{User: s.User, Pass: s.Pass}.AsMechanism())
	case "SCRAM-SHA-256":
		mech = kgo.SASL(scram.Auth{User: s.User, Pass: s.Pass}.AsSha256Mechanism())
	default:
		mech = kgo.SASL(scram.Auth{User: s.User, Pass: s.Pass}.AsSha512Mechanism())
	}
	s.Cluster = &Cluster{Cluster: c, Addrs: c.ListenAddrs(), lns: lns,
		Opts: []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}), mech}}
	return s
}

// selfSigned makes a CA and a server certificate for 127.0.0.1 it signs.
func selfSigned(t testing.TB) (*tls.Config, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafkatest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}
