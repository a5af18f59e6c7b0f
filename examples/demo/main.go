// Command demo runs lutkit's main job end to end on sample data, as
// "make demo" does:
//
//  1. generate a customers table and internal sites (lut sample);
//  2. build them into a .lut and an .mmdb table with lut build, and ship
//     them to the directory enrichd reads, the manifest renamed last;
//  3. start enrichd on 127.0.0.1 (free ports) and send it syslog events
//     (lut sample events --send, and logger when it is installed);
//  4. check every enriched line against the sample data, show a few, the
//     /metrics lines that count them, and a key looked up over HTTP;
//  5. build and ship a new version of the customers table while events
//     stream, and show the events picking it up with none lost;
//  6. stop enrichd with SIGTERM and check it exits 0 having written every
//     event it received.
//
// Everything is left under the demo directory (default demo/). The
// binaries come from --bin (default bin/, filled by "make build"). Any
// failed step stops the demo with a message naming it and exit status 1.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lutkit/lutkit/internal/sample"
)

// The demo's data: customers 1..customers of seed 1 (version 1) and seed 2
// (version 2), sites of seed 1.
const (
	seedV1 = 1
	seedV2 = 2
	sites  = 64
	// Events: a share of misses, most addresses inside a site, a fifth of
	// those IPv6.
	missPct     = "3"
	internalPct = "70"
	ipv6Pct     = "20"
)

type demo struct {
	bin, dir    string
	customers   int
	events      int // first batch
	streamed    int // events sent while the new version ships
	rate        int // events/s of the streamed batch
	lut, daemon string
	tcpAddr     string
	httpURL     string
	proc        *exec.Cmd
	exited      chan struct{} // closed when proc has exited
	exitErr     error
	sent        int // events sent so far
	loggerSent  int // of which by logger
	steps, cur  int
	v2Shipped   bool // version 2 of the customers has been shipped
	curName     string
}

func main() {
	d := &demo{}
	flag.StringVar(&d.bin, "bin", "bin", "directory holding the lut and enrichd binaries")
	flag.StringVar(&d.dir, "dir", "demo", "directory for everything the demo makes (emptied first)")
	flag.IntVar(&d.customers, "customers", 100000, "rows of the customers table")
	flag.IntVar(&d.events, "events", 5000, "events of the first batch")
	flag.IntVar(&d.streamed, "streamed", 20000, "events streamed while a new table version ships")
	flag.IntVar(&d.rate, "rate", 10000, "events per second of the streamed batch")
	flag.Parse()
	start := time.Now()
	if err := d.run(); err != nil {
		d.kill()
		fmt.Fprintf(os.Stderr, "\ndemo FAILED at step %d/%d (%s): %v\n", d.cur, d.steps, d.curName, err)
		if d.proc != nil {
			fmt.Fprintf(os.Stderr, "enrichd's log: %s\n", filepath.Join(d.dir, "enrichd.log"))
		}
		os.Exit(1)
	}
	fmt.Printf("\ndemo: every step passed in %.1f s; everything it made is under %s/\n", time.Since(start).Seconds(), d.dir)
}

func (d *demo) run() error {
	steps := []struct {
		name string
		fn   func() error
	}{
		{"check the binaries", d.checkBinaries},
		{"generate sample data (lut sample)", d.generate},
		{"build the tables (lut build)", d.build},
		{"ship version 1 to the directory enrichd reads", d.shipFirst},
		{"start enrichd", d.start},
		{"send syslog events", d.send},
		{"check the enriched events", d.checkFirst},
		{"read /metrics", d.metrics},
		{"look keys up over HTTP", d.lookup},
		{"build and ship version 2 while events stream", d.swap},
		{"stop enrichd (SIGTERM)", d.stop},
	}
	d.steps = len(steps)
	for i, s := range steps {
		d.cur, d.curName = i+1, s.name
		fmt.Printf("\n[%d/%d] %s\n", d.cur, d.steps, s.name)
		if err := s.fn(); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) path(elem ...string) string { return filepath.Join(append([]string{d.dir}, elem...)...) }

// sh runs a command as the user would type it, printing it and its output
// indented.
func (d *demo) sh(name string, args ...string) (string, error) {
	fmt.Printf("  $ %s %s\n", name, strings.Join(quoteArgs(args), " "))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	printIndented(out.String(), 12)
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out.String(), nil
}

func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'$*?;&|<>(){}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return q
}

// printIndented prints at most max lines of s, indented.
func printIndented(s string, max int) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l == "" && len(lines) == 1 {
			return
		}
		if i == max {
			fmt.Printf("    ... (%d more lines)\n", len(lines)-max)
			return
		}
		fmt.Printf("    %s\n", l)
	}
}

func (d *demo) checkBinaries() error {
	d.lut, d.daemon = filepath.Join(d.bin, "lut"), filepath.Join(d.bin, "enrichd")
	for _, b := range []string{d.lut, d.daemon} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%w (run make build first)", err)
		}
		if _, err := d.sh(b, "--version"); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(d.dir); err != nil {
		return err
	}
	return os.MkdirAll(d.path("sources"), 0o755)
}

func (d *demo) generate() error {
	n := strconv.Itoa(d.customers)
	if _, err := d.sh(d.lut, "sample", "customers", n, "--seed", strconv.Itoa(seedV1), "--out", d.path("sources", "customers.csv")); err != nil {
		return err
	}
	if _, err := d.sh(d.lut, "sample", "sites", strconv.Itoa(sites), "--out", d.path("sources", "sites.csv")); err != nil {
		return err
	}
	for _, f := range []string{"customers.csv", "sites.csv"} {
		if _, err := d.sh("head", "-n", "3", d.path("sources", f)); err != nil {
			return err
		}
	}
	return nil
}

const tablesYAML = `# Built by "lut build tables.yaml --out build/"; source paths are relative
# to this file.
version: 1
tables:
  - name: customers
    kind: lut
    sources: [sources/customers.csv]
    key: Index
  - name: sites
    kind: mmdb
    profile: city
    database_type: Lutkit-Demo-City
    sources:
      - path: sources/sites.csv
        type: networks
        network_column: network
        fields: ["city.names.en=city", "country.iso_code=country", "subdivisions.0.names.en=zone",
                 "location.latitude=lat", "location.longitude=lon", "site=site"]
`

func (d *demo) build() error {
	if err := os.WriteFile(d.path("tables.yaml"), []byte(tablesYAML), 0o644); err != nil {
		return err
	}
	fmt.Printf("  wrote %s: a .lut customers table keyed by Index, an .mmdb of the sites' networks\n", d.path("tables.yaml"))
	if _, err := d.sh(d.lut, "build", d.path("tables.yaml"), "--out", d.path("build")); err != nil {
		return err
	}
	if _, err := d.sh(d.lut, "verify", d.path("build")); err != nil {
		return err
	}
	_, err := d.sh(d.lut, "get", filepath.Join(d.path("build"), artifact(d.path("build"), "sites")), sample.NewSite(seedV1, sites, 5).IPv4.Addr().Next().String())
	return err
}

// manifest is what the demo reads of a MANIFEST.json.
type manifest struct {
	Tables []struct {
		Name   string `json:"name"`
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
	} `json:"tables"`
}

func readManifest(dir string) (manifest, error) {
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, "MANIFEST.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	return m, err
}

// artifact returns the file name of table name in dir's manifest.
func artifact(dir, name string) string {
	m, _ := readManifest(dir)
	for _, t := range m.Tables {
		if t.Name == name {
			return t.File
		}
	}
	return name + "-missing"
}

// ship copies build/'s artifacts that tables/ lacks, then the manifest to
// a temporary name, renamed into place last: what rsync or an object store
// download does on a node.
func (d *demo) ship() error {
	src, dst := d.path("build"), d.path("tables")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	m, err := readManifest(src)
	if err != nil {
		return err
	}
	for _, t := range m.Tables {
		if _, err := os.Stat(filepath.Join(dst, t.File)); err == nil {
			continue
		}
		fmt.Printf("  $ cp %s %s/\n", filepath.Join(src, t.File), dst)
		if err := copyFile(filepath.Join(src, t.File), filepath.Join(dst, t.File)); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dst, ".MANIFEST.json.tmp")
	fmt.Printf("  $ cp %s %s && mv %s %s   # the manifest last\n", filepath.Join(src, "MANIFEST.json"), tmp, tmp, filepath.Join(dst, "MANIFEST.json"))
	if err := copyFile(filepath.Join(src, "MANIFEST.json"), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dst, "MANIFEST.json"))
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (d *demo) shipFirst() error { return d.ship() }

const enrichdYAML = `# enrichd configuration of the demo (paths are relative to this file).
# See examples/enrichd.yaml for every setting.
inputs:
  - {name: syslog, type: tcp, listen: "%s", format: syslog}
tables: {path: %s, verify: digest, poll_interval: 200ms}
rules:
  - name: customer
    table: customers
    field: cust
    target: customer
    columns: {Customer Id: id, First Name: first_name, Last Name: last_name,
              Company: organization.name, Country: country, Email: email}
    on_miss: {tag: customer_unknown}
  - name: site
    table: sites
    field: src
    target: source.geo
    mmdb_fields:
      city.names.en: city_name
      country.iso_code: country_iso_code
      subdivisions.0.names.en: region_name
      location.latitude: location.lat
      location.longitude: location.lon
      x_internal.site: name
outputs:
  - {type: file, path: %s}
http: {listen: "%s"}
log: {format: text}
`

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (d *demo) start() error {
	var last error
	for attempt := 1; attempt <= 3; attempt++ {
		tcp, err := freePort()
		if err != nil {
			return err
		}
		httpAddr, err := freePort()
		if err != nil {
			return err
		}
		cfg := fmt.Sprintf(enrichdYAML, tcp, "tables", "enriched.json", httpAddr)
		if err := os.WriteFile(d.path("enrichd.yaml"), []byte(cfg), 0o644); err != nil {
			return err
		}
		if _, err := d.sh(d.daemon, "--config", d.path("enrichd.yaml"), "--check-config"); err != nil {
			return err
		}
		d.tcpAddr, d.httpURL = tcp, "http://"+httpAddr
		if last = d.startOnce(); last == nil {
			return nil
		}
		fmt.Printf("  enrichd did not start (%v); trying other ports\n", last)
	}
	return last
}

func (d *demo) startOnce() error {
	logf, err := os.Create(d.path("enrichd.log"))
	if err != nil {
		return err
	}
	fmt.Printf("  $ %s --config %s > %s 2>&1 &\n", d.daemon, d.path("enrichd.yaml"), d.path("enrichd.log"))
	cmd := exec.Command(d.daemon, "--config", d.path("enrichd.yaml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	d.proc, d.exited = cmd, make(chan struct{})
	go func() {
		d.exitErr = cmd.Wait()
		logf.Close()
		close(d.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, err := d.get("/readyz"); err == nil && code == 200 {
			break
		}
		select {
		case <-d.exited:
			d.proc = nil
			log, _ := os.ReadFile(d.path("enrichd.log"))
			return fmt.Errorf("enrichd exited (%w): %s", d.exitErr, strings.TrimSpace(string(log)))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("enrichd not ready after 30 s")
		}
	}
	fmt.Printf("  enrichd (pid %d) is ready: syslog on tcp://%s, HTTP on %s\n", cmd.Process.Pid, d.tcpAddr, d.httpURL)
	return nil
}

func (d *demo) get(path string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(d.httpURL + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// eventArgs are the "lut sample events" arguments of events first..first+n-1.
func (d *demo) eventArgs(first, n int) []string {
	return []string{"sample", "events", strconv.Itoa(n), "--first", strconv.Itoa(first),
		"--customers", strconv.Itoa(d.customers), "--sites", strconv.Itoa(sites),
		"--miss", missPct, "--internal", internalPct, "--ipv6", ipv6Pct}
}

func (d *demo) send() error {
	args := append(d.eventArgs(0, 3), "--format", "rfc5424")
	if _, err := d.sh(d.lut, args...); err != nil { // what they look like
		return err
	}
	if _, err := d.sh(d.lut, append(d.eventArgs(0, d.events), "--send", "tcp://"+d.tcpAddr)...); err != nil {
		return err
	}
	d.sent += d.events
	if path, err := exec.LookPath("logger"); err == nil {
		help, _ := exec.Command(path, "--help").CombinedOutput()
		if bytes.Contains(help, []byte("--octet-count")) {
			host, port, _ := net.SplitHostPort(d.tcpAddr)
			site := sample.NewSite(seedV1, sites, 0).IPv6.Addr().Next()
			if _, err := d.sh("logger", "--server", host, "--port", port, "--tcp", "--rfc5424", "--octet-count",
				"--tag", "logger-demo", "cust=42 src="+site.String()+" action=logger"); err != nil {
				return err
			}
			d.sent++
			d.loggerSent++
		}
	} else {
		fmt.Println("  (logger is not installed: only lut sample sends)")
	}
	return nil
}

// waitLines waits until the output file holds n lines.
func (d *demo) waitLines(n int) ([]string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines, err := readLines(d.path("enriched.json"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if len(lines) >= n {
			return lines, nil
		}
		if time.Now().After(deadline) {
			return lines, fmt.Errorf("%d events sent, %d written after 30 s", n, len(lines))
		}
		select {
		case <-d.exited:
			return lines, fmt.Errorf("enrichd exited (%w)", d.exitErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

// enriched is what the demo checks of an output line.
type enriched struct {
	Timestamp string   `json:"@timestamp"`
	Message   string   `json:"message"`
	Cust      string   `json:"cust"`
	Src       string   `json:"src"`
	Tags      []string `json:"tags"`
	Customer  *struct {
		ID        string `json:"id"`
		FirstName string `json:"first_name"`
		Email     string `json:"email"`
	} `json:"customer"`
	Source *struct {
		Geo *struct {
			City string `json:"city_name"`
			Name string `json:"name"`
		} `json:"geo"`
	} `json:"source"`
}

// tally counts what the checked lines held.
type tally struct {
	lines, v1, v2, misses, v4site, v6site, public int
	firstV2, lastV1                               int // event numbers (-1: none)
	show                                          map[string]string
}

// check checks every line against the sample data: the customer row of
// version 1 or 2 (never a mix), the miss tag, the site of the address.
func (d *demo) check(lines []string) (tally, error) {
	t := tally{firstV2: -1, lastV1: -1, show: map[string]string{}}
	for i, line := range lines {
		var e enriched
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return t, fmt.Errorf("line %d is not JSON: %w: %s", i+1, err, line)
		}
		t.lines++
		num := -1
		if ts, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil && !strings.Contains(e.Message, "action=logger") {
			num = int(ts.Sub(sample.DefaultStart) / time.Millisecond)
		}
		idx, err := strconv.Atoi(e.Cust)
		switch {
		case err != nil || idx < 1 || idx > d.customers:
			if e.Customer != nil || !contains(e.Tags, "customer_unknown") {
				return t, fmt.Errorf("line %d: cust %q is in no table, yet customer=%v tags=%v", i+1, e.Cust, e.Customer, e.Tags)
			}
			t.misses++
			setOnce(t.show, "a customer that is in no table", line)
		default:
			if e.Customer == nil {
				return t, fmt.Errorf("line %d: customer %d not enriched: %s", i+1, idx, line)
			}
			c1, c2 := sample.NewCustomer(seedV1, idx), sample.NewCustomer(seedV2, idx)
			switch {
			case e.Customer.ID == c1.ID && e.Customer.Email == c1.Email && e.Customer.FirstName == c1.FirstName:
				t.v1++
				t.lastV1 = max(t.lastV1, num)
			case d.v2Shipped && e.Customer.ID == c2.ID && e.Customer.Email == c2.Email && e.Customer.FirstName == c2.FirstName:
				t.v2++
				if t.firstV2 < 0 || num < t.firstV2 {
					t.firstV2 = num
				}
			default:
				return t, fmt.Errorf("line %d: customer %d is %+v, which is the row of no version", i+1, idx, *e.Customer)
			}
		}
		addr, err := netip.ParseAddr(e.Src)
		if err != nil {
			return t, fmt.Errorf("line %d: src %q: %w", i+1, e.Src, err)
		}
		var geoName, geoCity string
		if e.Source != nil && e.Source.Geo != nil {
			geoName, geoCity = e.Source.Geo.Name, e.Source.Geo.City
		}
		if j, ok := sample.SiteOf(sites, addr); ok {
			s := sample.NewSite(seedV1, sites, j)
			if geoName != s.Name || geoCity != s.City {
				return t, fmt.Errorf("line %d: %v is in site %s (%s), enriched with %q (%q)", i+1, addr, s.Name, s.City, geoName, geoCity)
			}
			if addr.Is6() {
				t.v6site++
				setOnce(t.show, "an IPv6 address of a site", line)
			} else {
				t.v4site++
				setOnce(t.show, "an IPv4 address of a site", line)
			}
		} else {
			if geoName != "" {
				return t, fmt.Errorf("line %d: %v is in no site, enriched with site %q", i+1, addr, geoName)
			}
			t.public++
			setOnce(t.show, "a public address (in no site)", line)
		}
		if strings.Contains(e.Message, "action=logger") {
			setOnce(t.show, "sent by logger", line)
		}
	}
	return t, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func setOnce(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

func (d *demo) checkFirst() error {
	lines, err := d.waitLines(d.sent)
	if err != nil {
		return err
	}
	if len(lines) != d.sent {
		return fmt.Errorf("%d events sent, %d lines written", d.sent, len(lines))
	}
	t, err := d.check(lines)
	if err != nil {
		return err
	}
	fmt.Printf("  %s: %d lines for %d events sent; every line checked against the sample data:\n", d.path("enriched.json"), len(lines), d.sent)
	fmt.Printf("    customers: %d rows correct, %d keys in no table tagged customer_unknown\n", t.v1, t.misses)
	fmt.Printf("    sites: %d IPv4 and %d IPv6 addresses enriched with their site, %d public addresses left alone\n", t.v4site, t.v6site, t.public)
	if t.v4site == 0 || t.v6site == 0 || t.misses == 0 || t.public == 0 {
		return errors.New("the events did not cover every case (site IPv4, site IPv6, public, miss)")
	}
	for _, k := range []string{"an IPv4 address of a site", "an IPv6 address of a site", "a public address (in no site)", "a customer that is in no table", "sent by logger"} {
		if l, ok := t.show[k]; ok {
			fmt.Printf("  %s:\n    %s\n", k, l)
		}
	}
	if d.loggerSent > 0 && t.show["sent by logger"] == "" {
		return errors.New("the event logger sent is not in the output")
	}
	return nil
}

var metricLine = regexp.MustCompile(`^enrichd_(events_in_total|events_out_total|lookups_total|table_generation|table_swaps_total|table_rows)\b`)

// metricSum returns the sum of the samples of a metric (every label set).
func metricSum(text, name string) float64 {
	var sum float64
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

func (d *demo) readMetrics() (string, error) {
	code, body, err := d.get("/metrics")
	if err == nil && code != 200 {
		err = fmt.Errorf("GET /metrics: %d", code)
	}
	return body, err
}

func (d *demo) metrics() error {
	fmt.Printf("  $ curl -s %s/metrics | grep -E '%s'\n", d.httpURL, metricLine.String()[1:])
	body, err := d.readMetrics()
	if err != nil {
		return err
	}
	for _, l := range strings.Split(body, "\n") {
		if metricLine.MatchString(l) {
			fmt.Printf("    %s\n", l)
		}
	}
	in, out := metricSum(body, "enrichd_events_in_total"), metricSum(body, "enrichd_events_out_total")
	if int(in) != d.sent || int(out) != d.sent {
		return fmt.Errorf("/metrics counts %v events in and %v out, %d were sent", in, out, d.sent)
	}
	return nil
}

func (d *demo) lookup() error {
	for _, p := range []string{"/v1/tables", "/v1/tables/customers/42", "/v1/tables/sites/" + sample.NewSite(seedV1, sites, 7).IPv6.Addr().Next().String(), "/v1/tables/customers/0"} {
		fmt.Printf("  $ curl -s %s%s\n", d.httpURL, p)
		code, body, err := d.get(p)
		if err != nil {
			return err
		}
		printIndented(body, 5)
		want := 200
		if strings.HasSuffix(p, "/0") {
			want = 404
		}
		if code != want {
			return fmt.Errorf("GET %s: %d, want %d", p, code, want)
		}
	}
	return d.checkRow42(seedV1)
}

// checkRow42 checks that the HTTP API answers customer 42 of seed.
func (d *demo) checkRow42(seed uint64) error {
	_, body, err := d.get("/v1/tables/customers/42")
	if err != nil {
		return err
	}
	var row map[string]string
	if err := json.Unmarshal([]byte(body), &row); err != nil {
		return fmt.Errorf("GET /v1/tables/customers/42: %w: %s", err, body)
	}
	c := sample.NewCustomer(seed, 42)
	if row["Customer Id"] != c.ID || row["Email"] != c.Email {
		return fmt.Errorf("GET /v1/tables/customers/42 gives %v, want the row of seed %d: %+v", row, seed, c)
	}
	return nil
}

func (d *demo) swap() error {
	// Version 2: the same customers with other values (another seed).
	if _, err := d.sh(d.lut, "sample", "customers", strconv.Itoa(d.customers), "--seed", strconv.Itoa(seedV2), "--out", d.path("sources", "customers.csv")); err != nil {
		return err
	}
	if _, err := d.sh(d.lut, "build", d.path("tables.yaml"), "--out", d.path("build")); err != nil {
		return err
	}
	m, err := readManifest(d.path("build"))
	if err != nil {
		return err
	}
	var newDigest string
	for _, t := range m.Tables {
		if t.Name == "customers" {
			newDigest = t.SHA256
		}
	}
	// Stream events while the new version ships.
	first := d.sent - d.loggerSent
	args := append(d.eventArgs(first, d.streamed), "--send", "tcp://"+d.tcpAddr, "--rate", strconv.Itoa(d.rate))
	fmt.Printf("  $ %s %s &\n", d.lut, strings.Join(args, " "))
	var senderOut bytes.Buffer
	sender := exec.Command(d.lut, args...)
	sender.Stdout, sender.Stderr = &senderOut, &senderOut
	if err := sender.Start(); err != nil {
		return err
	}
	senderDone := make(chan error, 1)
	go func() { senderDone <- sender.Wait() }()
	time.Sleep(time.Duration(d.streamed) * time.Second / time.Duration(d.rate) / 3)
	swapStart := time.Now()
	d.v2Shipped = true
	if err := d.ship(); err != nil {
		killProcess(sender)
		return err
	}
	// The set is swapped once /v1/tables shows the new digest.
	for {
		_, body, err := d.get("/v1/tables")
		if err == nil && strings.Contains(body, newDigest) {
			break
		}
		if time.Since(swapStart) > 20*time.Second {
			killProcess(sender)
			return errors.New("enrichd did not load version 2 within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("  enrichd serves version 2 %.0f ms after the manifest was renamed\n", float64(time.Since(swapStart).Microseconds())/1000)
	select {
	case err := <-senderDone:
		printIndented(senderOut.String(), 3)
		if err != nil {
			return fmt.Errorf("lut sample events --send: %w", err)
		}
	case <-time.After(60 * time.Second):
		killProcess(sender)
		return errors.New("the sender did not finish within 60 s")
	}
	d.sent += d.streamed
	lines, err := d.waitLines(d.sent)
	if err != nil {
		return err
	}
	if len(lines) != d.sent {
		return fmt.Errorf("%d events sent, %d lines written", d.sent, len(lines))
	}
	before := d.events + d.loggerSent
	t, err := d.check(lines[before:])
	if err != nil {
		return err
	}
	fmt.Printf("  %d events streamed at %d/s, %d lines written for them: %d enriched from version 1, %d from version 2 (%d keys in no table), none from a mix\n",
		d.streamed, d.rate, t.lines, t.v1, t.v2, t.misses)
	fmt.Printf("  the last event enriched from version 1 is #%d, the first from version 2 #%d\n", t.lastV1, t.firstV2)
	if t.v1 == 0 || t.v2 == 0 {
		return errors.New("the stream did not straddle the swap: raise --streamed or lower --rate")
	}
	fmt.Printf("  $ curl -s %s/v1/tables/customers/42\n", d.httpURL)
	if _, body, err := d.get("/v1/tables/customers/42"); err == nil {
		printIndented(body, 3)
	}
	if err := d.checkRow42(seedV2); err != nil {
		return err
	}
	body, err := d.readMetrics()
	if err != nil {
		return err
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "enrichd_table_swaps_total") || strings.HasPrefix(l, "enrichd_table_generation") || strings.HasPrefix(l, "enrichd_events_") && strings.Contains(l, "_total") && !strings.Contains(l, "truncated") {
			fmt.Printf("    %s\n", l)
		}
	}
	if in := metricSum(body, "enrichd_events_in_total"); int(in) != d.sent {
		return fmt.Errorf("/metrics counts %v events in, %d were sent", in, d.sent)
	}
	return nil
}

func (d *demo) stop() error {
	fmt.Printf("  $ kill -TERM %d\n", d.proc.Process.Pid)
	if err := d.proc.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-d.exited:
	case <-time.After(45 * time.Second):
		return errors.New("enrichd did not exit within 45 s of SIGTERM")
	}
	d.proc = nil
	if d.exitErr != nil {
		return fmt.Errorf("enrichd exited with %w", d.exitErr)
	}
	log, _ := os.ReadFile(d.path("enrichd.log"))
	fmt.Println("  enrichd exited with status 0; the end of its log:")
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	printIndented(strings.Join(lines[max(0, len(lines)-2):], "\n"), 2)
	out, err := readLines(d.path("enriched.json"))
	if err != nil {
		return err
	}
	if len(out) != d.sent {
		return fmt.Errorf("%d events sent, %d lines written", d.sent, len(out))
	}
	fmt.Printf("  %d events sent, %d enriched lines written: none lost\n", d.sent, len(out))
	entries, _ := os.ReadDir(d.dir)
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	fmt.Printf("  %s/ holds: %s\n", d.dir, strings.Join(names, " "))
	return nil
}

// kill stops enrichd after a failure.
func (d *demo) kill() {
	if d.proc == nil {
		return
	}
	if err := d.proc.Process.Signal(syscall.SIGTERM); err == nil {
		select {
		case <-d.exited:
			return
		case <-time.After(10 * time.Second):
		}
	}
	killProcess(d.proc)
}

// killProcess kills cmd's process; it may have exited already, which is
// what is wanted.
func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
