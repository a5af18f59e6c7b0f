package fleet_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/s3test"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/internal/testpki"
)

// pki is a certificate authority made by the test, with a server
// certificate for 127.0.0.1 and a client certificate.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// makePKI makes the CA (internal/testpki), whose files nginx and the
// nodes read.
func makePKI(t *testing.T) pki {
	t.Helper()
	ca := testpki.NewCA(t, "fleet")
	srv := ca.Server(t, "fleet-store")
	cli := ca.Client(t, "enrichd-node")
	return pki{ca: ca.CertFile, serverCert: srv.CertFile, serverKey: srv.KeyFile, clientCert: cli.CertFile, clientKey: cli.KeyFile}
}

// nginx is a running nginx serving root over TLS with client
// certificates required and a bearer token checked on /tables/.
type nginx struct {
	t      *testing.T
	dir    string
	root   string // /tables/ is root/tables
	port   int
	token  string
	pki    pki
	cmd    *exec.Cmd
	access string
	bin    string
	conf   string
}

func nginxBinary(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	testfiles.Missing(t, "nginx (Debian package nginx-light)")
	return ""
}

// startNginx starts nginx; slow names files of /tables/ sent at 30 KB/s
// (to stop the store in the middle of their download).
func startNginx(t *testing.T, token string, slow ...string) *nginx {
	t.Helper()
	bin := nginxBinary(t)
	dir := t.TempDir()
	n := &nginx{t: t, dir: dir, root: filepath.Join(dir, "www"), token: token, pki: makePKI(t),
		access: filepath.Join(dir, "access.log")}
	if err := os.MkdirAll(filepath.Join(n.root, "tables"), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 512; }
http {
    log_format fleet '$http_x_node $request_method $uri $status $body_bytes_sent';
    access_log %[1]s/access.log fleet;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    default_type application/octet-stream;
    map $uri $rate {
        default 0;
%[8]s    }
    server {
        listen 127.0.0.1:%[2]d ssl;
        ssl_certificate %[3]s;
        ssl_certificate_key %[4]s;
        ssl_client_certificate %[5]s;
        ssl_verify_client on;
        root %[6]s;
        location /tables/ {
            limit_rate $rate;
            if ($http_authorization = "") { return 401; }
            if ($http_authorization != "Bearer %[7]s") { return 403; }
        }
    }
}
`, dir, n.port, n.pki.serverCert, n.pki.serverKey, n.pki.ca, n.root, token, slowMap(slow))
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	n.bin, n.conf = bin, confPath
	t.Cleanup(n.stop)
	n.start()
	return n
}

// start starts nginx (again, after stop) and waits until it answers.
func (n *nginx) start() {
	n.t.Helper()
	n.cmd = exec.Command(n.bin, "-p", n.dir, "-c", n.conf, "-e", filepath.Join(n.dir, "error.log"))
	stderr, _ := n.cmd.StderrPipe()
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(stderr)) }()
	n.waitUp()
}

func slowMap(files []string) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "        /tables/%s 30k;\n", f)
	}
	return b.String()
}

// client is an HTTPS client that trusts the test CA and presents the
// client certificate.
func (n *nginx) client() *http.Client {
	n.t.Helper()
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(n.pki.ca)
	pool.AppendCertsFromPEM(b)
	cert, err := tls.LoadX509KeyPair(n.pki.clientCert, n.pki.clientKey)
	if err != nil {
		n.t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
}

func (n *nginx) waitUp() {
	n.t.Helper()
	c := n.client()
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := c.Get(n.url())
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
			n.t.Fatalf("nginx did not answer on port %d: %v\n%s", n.port, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *nginx) stop() {
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait() // killed: the status says so
		n.cmd = nil
	}
}

func (n *nginx) url() string {
	return fmt.Sprintf("https://127.0.0.1:%d/tables/MANIFEST.json", n.port)
}

// dest is where lut publish writes for nginx to serve.
func (n *nginx) dest() string { return "file://" + filepath.Join(n.root, "tables") + "/" }

// accessCounts counts access log lines by node, path and status.
func (n *nginx) accessCounts() map[string]int {
	n.t.Helper()
	b, err := os.ReadFile(n.access)
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		// node GET /tables/NAME status
		out[f[0]+" "+f[1]+" "+f[2]+" "+f[3]]++
	}
	return out
}

func startS3(t *testing.T) *s3test.Server { return s3test.Start(t, "tables") }
