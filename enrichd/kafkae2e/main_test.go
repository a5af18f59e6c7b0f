package kafkae2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/lutkit/lutkit/internal/kafkatest"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/reader/mmdb"
)

const group = "enrichd"

// enrichdBin is the enrichd binary TestMain builds; workDir holds it.
var enrichdBin, workDir string

func TestMain(m *testing.M) {
	var err error
	if workDir, err = os.MkdirTemp("", "kafkae2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enrichdBin = filepath.Join(workDir, "enrichd")
	if bin := os.Getenv("KAFKAE2E_ENRICHD"); bin != "" {
		// Another build's binary, to compare builds (BENCHMARKS.md).
		enrichdBin = bin
		code := m.Run()
		os.RemoveAll(workDir)
		os.Exit(code)
	}
	build := exec.Command("go", "build", "-o", enrichdBin, "github.com/lutkit/lutkit/cmd/enrichd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building enrichd:", err)
		os.RemoveAll(workDir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(workDir)
	os.Exit(code)
}

// event is input event i over a customers table of rows rows.
func event(rows int) func(i int) []byte {
	return func(i int) []byte { return kafkatest.Event(i, rows) }
}

// tableDir returns a table directory holding a customers .lut table of
// rows rows (kafkatest.BuildCustomers) and the real city .mmdb as geo.
func tableDir(t testing.TB, rows int) string {
	t.Helper()
	dir := t.TempDir()
	kafkatest.BuildCustomers(t, filepath.Join(dir, "customers.lut"), rows, 1)
	linkGeo(t, dir)
	return dir
}

func linkGeo(t testing.TB, dir string) {
	t.Helper()
	if err := os.Symlink(testfiles.CityMMDB(t), filepath.Join(dir, "geo.mmdb")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
}

// conf is what differs between the tests' enrichd configurations.
type conf struct {
	tables   string // table directory
	input    string // more settings of the Kafka input, e.g. ", max_uncommitted: 5000"
	output   string // more settings of the Kafka output
	columns  string // the customer rule's columns setting, e.g. `columns: ["Customer Id"]`
	outTopic string // the output topic; "" for out
	pipeline string // more pipeline settings, e.g. ", delivery: exactly_once"
	outputs  string // the outputs section in place of the Kafka output, e.g. "[{name: sink, type: file, path: /dev/null}]"
	httpAddr string // set by writeConfig
	pin      bool   // run enrichd on CPU 0 alone (a benchmark: pin_test.go)
}

// writeConfig writes an enrichd configuration that reads topic in and
// writes topic out of c, with two lookups per event (customers by cust,
// the city .mmdb by src), and returns its path.
func writeConfig(t testing.TB, c *kafkatest.Cluster, name string, cf *conf) string {
	t.Helper()
	cf.httpAddr = freeAddr(t)
	brokers := `["` + strings.Join(c.Addrs, `","`) + `"]`
	columns := ""
	if cf.columns != "" {
		columns = ", " + cf.columns
	}
	out := cf.outTopic
	if out == "" {
		out = "out"
	}
	outputs := cf.outputs
	if outputs == "" {
		outputs = fmt.Sprintf("[{name: kafka, type: kafka, kafka: {brokers: %s, topic: %s%s}}]", brokers, out, cf.output)
	}
	yml := fmt.Sprintf(`
inputs:
  - name: kafka
    type: kafka
    kafka: {brokers: %[1]s, topics: [in], group: %[2]s%[3]s}
tables: {path: %[4]q, verify: none}
rules:
  - {name: customer, table: customers, field: cust, target: customer%[5]s}
  - {name: geo, table: geo, field: src, target: source.geo,
     mmdb_fields: {country_code: country_iso_code, city: city_name}}
outputs: %[7]s
pipeline: {kv_fields: all%[8]s}
http: {listen: %[6]q}
`, brokers, group, cf.input, cf.tables, columns, cf.httpAddr, outputs, cf.pipeline)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// proc is an enrichd process.
type proc struct {
	name, addr, logPath string
	cmd                 *exec.Cmd
	done                chan struct{} // closed when it exited
	err                 error         // Wait's, once done is closed
	last                map[string]float64
}

// start runs enrichd with the configuration at cfgPath; its stderr goes
// to a file whose tail the test prints if it fails. The process is
// killed when the test ends, if it still runs.
func start(t testing.TB, name, cfgPath string, cf *conf) *proc {
	t.Helper()
	return startCmd(t, name, cf.httpAddr, enrichdCmd(cf.pin, "--config", cfgPath))
}

// startCmd runs cmd, a process that serves its metrics at addr, as
// start runs enrichd.
func startCmd(t testing.TB, name, addr string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, addr: addr, logPath: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = cmd
	p.cmd.Stderr = logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("killing %s: %v", p.name, err)
			}
			<-p.done
		}
		if t.Failed() {
			t.Logf("last lines of %s's log:\n%s", p.name, p.tail(60))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady waits until the process serves /readyz.
func (p *proc) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("%s exited before it was ready: %v", p.name, p.err)
		}
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 30s", p.name)
}

// metrics scrapes /metrics: sample (name and labels) to value. Once the
// process is gone it returns the last scrape.
func (p *proc) metrics() map[string]float64 {
	if p.exited() {
		return p.last
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/metrics", nil)
	if err != nil {
		return p.last
	}
	// Uncompressed: the benchmarks scrape often, and gzip was about 2%
	// of enrichd's CPU in the Kafka benchmark.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p.last
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		i := strings.LastIndexByte(l, ' ')
		if i < 0 || strings.HasPrefix(l, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
			m[l[:i]] = v
		}
	}
	if sc.Err() != nil {
		return p.last
	}
	p.last = m
	return m
}

// Samples of the metrics the tests read.
const (
	mProduced   = `enrichd_kafka_produced_total{output="kafka"}`
	mRetries    = `enrichd_kafka_produce_retries_total{output="kafka"}`
	mFetchErrs  = `enrichd_kafka_fetch_errors_total{input="kafka"}`
	mRebalances = `enrichd_kafka_rebalances_total{input="kafka"}`
	mInflight   = `enrichd_kafka_uncommitted_events{input="kafka"}`
	mEventsIn   = `enrichd_events_in_total{input="kafka",type="kafka"}`
	// mDeliveredAge is how long the oldest delivered event has waited for
	// its offset to be committed.
	mDeliveredAge = `enrichd_kafka_delivered_uncommitted_seconds{input="kafka"}`
)

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// term sends SIGTERM and waits for a clean exit.
func (p *proc) term(t testing.TB) {
	t.Helper()
	// A process already gone says why in p.err.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("%s: SIGTERM: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop within 60s of SIGTERM", p.name)
	}
	if p.err != nil {
		t.Errorf("%s: %v after SIGTERM", p.name, p.err)
	}
}

// eventsOut returns the events_out of the "shut down" line of the
// process's log: the events it delivered, as it counted them when it
// stopped. It fails the test when the process did not log one.
func (p *proc) eventsOut(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		var rec struct {
			Msg       string `json:"msg"`
			EventsOut *int   `json:"events_out"`
		}
		if json.Unmarshal(l, &rec) == nil && rec.Msg == "shut down" && rec.EventsOut != nil {
			return *rec.EventsOut
		}
	}
	t.Fatalf("%s logged no \"shut down\" line with events_out", p.name)
	return 0
}

// cpu returns the user and system CPU time of the exited process.
func (p *proc) cpu() time.Duration {
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}

// sum adds sample over the processes.
func sum(procs []*proc, sample string) float64 {
	var s float64
	for _, p := range procs {
		s += p.metrics()[sample]
	}
	return s
}

// waitCommitted waits until the group has committed every record of the
// input topic, failing the test after timeout or if a process in procs
// exits. It returns when the first event went out (the first poll that
// saw one) and when the last was committed.
func waitCommitted(t testing.TB, c *kafkatest.Cluster, timeout time.Duration, procs ...*proc) (first, done time.Time) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		now := time.Now()
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("%s exited: %v", p.name, p.err)
			}
		}
		if first.IsZero() && sum(procs, mProduced) > 0 {
			first = now
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		lag, err := kafkatest.GroupLag(ctx, adm, group, "in")
		cancel()
		if err == nil && lag == 0 {
			if first.IsZero() {
				first = now
			}
			return first, now
		}
		if now.After(deadline) {
			t.Fatalf("after %v the group has %d events uncommitted (err %v); %v out", timeout, lag, err, sum(procs, mProduced))
		}
		if now.Sub(lastLog) > 10*time.Second {
			t.Logf("%d events uncommitted (err %v), %v produced to out", lag, err, sum(procs, mProduced))
			lastLog = now
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitOut waits until the processes produced at least n events to the
// output topic.
func waitOut(t testing.TB, n float64, timeout time.Duration, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for sum(procs, mProduced) < n {
		if time.Now().After(deadline) {
			t.Fatalf("after %v %v events out, want %v", timeout, sum(procs, mProduced), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStable waits until the group is stable with members members.
func waitStable(t testing.TB, c *kafkatest.Cluster, members int, timeout time.Duration) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	deadline := time.Now().Add(timeout)
	var state string
	var got int
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		gs, err := adm.DescribeGroups(ctx, group)
		cancel()
		if g, ok := gs[group]; err == nil && ok && g.Err == nil {
			state, got = g.State, len(g.Members)
			if state == "Stable" && got == members && len(g.AssignedPartitions()["in"]) > 0 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s not stable with %d members after %v: %s, %d members", group, members, timeout, state, got)
}

// result is what the output topic holds, checked.
type result struct {
	*kafkatest.Tally
	geo geoCheck
}

// readOut reads the whole output topic: each event is tallied by id with
// its customer checked (kafkatest.Tally), and every tenth one's geo
// fields are checked against the .mmdb.
func readOut(t testing.TB, c *kafkatest.Cluster) *result {
	t.Helper()
	return readOutWith(t, c.ReadAll)
}

// readOutWith is readOut with read, a reader of the whole topic
// (Cluster.ReadAll or ReadCommitted).
func readOutWith(t testing.TB, read func(testing.TB, string, time.Duration, func([]byte)) int) *result {
	t.Helper()
	r := &result{Tally: kafkatest.NewTally(kafkatest.CustomerID)}
	r.geo.open(t)
	read(t, "out", 120*time.Second, func(v []byte) {
		r.Add(v)
		if r.Total%10 == 0 {
			r.geo.check(v)
		}
	})
	return r
}

// verify fails the test unless every id in [0, n) arrived, all enriched
// as the tables say; it logs the duplicates and returns their number.
func (r *result) verify(t testing.TB, n int) int {
	t.Helper()
	if len(r.Bad) > 0 {
		t.Errorf("%d events enriched wrong, first: %s", len(r.Bad), r.Bad[0])
	}
	if len(r.geo.bad) > 0 {
		t.Errorf("%d of %d events checked have wrong geo fields, first: %s", len(r.geo.bad), r.geo.checked, r.geo.bad[0])
	}
	if r.geo.found == 0 {
		t.Errorf("none of %d events checked has a geo field", r.geo.checked)
	}
	if miss := r.Missing(n); len(miss) > 0 {
		t.Errorf("%d of %d events missing, first %v", len(miss), n, miss[:min(5, len(miss))])
	}
	if len(r.Seen) > n {
		t.Errorf("%d distinct ids out, only %d went in", len(r.Seen), n)
	}
	t.Logf("output: %d events, %d distinct ids, %d duplicates; geo checked on %d (%d with a country)",
		r.Total, len(r.Seen), r.Dups, r.geo.checked, r.geo.found)
	return r.Dups
}

// geoCheck compares the geo fields of enriched events with a lookup of
// their src in the .mmdb (the rule copies its record paths country_code
// and city to source.geo.country_iso_code and city_name).
type geoCheck struct {
	r              *mmdb.Reader
	f              *mmdb.Fields
	out            []mmdb.Value
	checked, found int
	bad            []string
}

func (g *geoCheck) open(t testing.TB) {
	t.Helper()
	var err error
	if g.r, err = mmdb.Open(testfiles.CityMMDB(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.r.Close() })
	if g.f, err = mmdb.CompileFields("country_code", "city"); err != nil {
		t.Fatal(err)
	}
	g.out = make([]mmdb.Value, g.f.Len())
}

func (g *geoCheck) check(line []byte) {
	var m struct {
		Src    string `json:"src"`
		Source struct {
			Geo struct {
				Country string `json:"country_iso_code"`
				City    string `json:"city_name"`
			} `json:"geo"`
		} `json:"source"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return // the tally reports it
	}
	g.checked++
	ip, err := netip.ParseAddr(m.Src)
	if err != nil {
		g.bad = append(g.bad, fmt.Sprintf("src %q: %v", m.Src, err))
		return
	}
	if _, err := g.r.LookupFields(ip, g.f, g.out); err != nil {
		g.bad = append(g.bad, fmt.Sprintf("lookup %s: %v", ip, err))
		return
	}
	var country, city string
	if g.out[0].Found() {
		country = g.out[0].String()
	}
	if g.out[1].Found() {
		city = g.out[1].String()
	}
	if m.Source.Geo.Country != country || m.Source.Geo.City != city {
		g.bad = append(g.bad, fmt.Sprintf("src %s: country %q city %q, the .mmdb says %q %q", ip, m.Source.Geo.Country, m.Source.Geo.City, country, city))
	}
	if country != "" {
		g.found++
	}
}

// logMetrics logs the Kafka metrics of each process.
func logMetrics(t testing.TB, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		m := p.metrics()
		t.Logf("%s: in %v, produced %v, produce retries %v, fetch errors %v, rebalances %v, uncommitted %v",
			p.name, m[mEventsIn], m[mProduced], m[mRetries], m[mFetchErrs], m[mRebalances], m[mInflight])
	}
}
