package kafkatest

import (
	"crypto/tls"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/lutkit/lutkit/internal/testpki"
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
	ca := testpki.NewCA(t, "kafkatest")
	serverTLS := &tls.Config{Certificates: []tls.Certificate{ca.Server(t, "127.0.0.1").TLS(t)}, MinVersion: tls.VersionTLS12}
	s.CAFile = ca.CertFile
	lns := &listeners{}
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...),
		kfake.TLS(serverTLS), kfake.EnableSASL(), kfake.Superuser(mechanism, s.User, s.Pass), kfake.ListenFn(lns.listen))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
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
		Opts: []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}), mech}}
	return s
}
