package kafka

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestKafkaCommitsWhatTheQueueHolds: with the persistent queue on, the
// Kafka input commits its offsets once the events are fsynced into the
// queue, although the only output (a file on /dev/full) delivers
// nothing: the group's lag drops to 0 while events_out stays 0. Each
// offset commit the brokers receive is compared with the events the
// queue had fsynced by then (disk_queue_events_total{stage="synced"},
// read again and again, the first read started after the commit
// arrived): a
// commit of events not yet fsynced fails the test. It runs with sync: 100
// and with the default sync every 500ms, under which events wait longest
// between their append and their fsync. The daemon is then stopped (the
// shutdown times out on the output) and one with a working file output
// replays the queue: the file holds every event, which Kafka will never
// send again.
func TestKafkaCommitsWhatTheQueueHolds(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatal("no /dev/full")
	}
	t.Run("events", func(t *testing.T) { testCommitsWhatTheQueueHolds(t, enrichd.QueueSync{Events: 100}) })
	t.Run("interval", func(t *testing.T) {
		testCommitsWhatTheQueueHolds(t, enrichd.QueueSync{Interval: enrichd.DefaultQueueSyncInterval})
	})
}

// syncedEvents reads the events d's persistent queue has fsynced.
func syncedEvents(d *enrichd.Daemon) (float64, error) {
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	const sample = `enrichd_disk_queue_events_total{stage="synced"} `
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, sample); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s in the metrics", strings.TrimSpace(sample))
}

func testCommitsWhatTheQueueHolds(t *testing.T, qsync enrichd.QueueSync) {
	const n, rows = 2000, 10
	c := kafkatest.Start(t, 1, 2, "in", "out")
	dir := t.TempDir()
	cfg := kafkaConfig(t, dir, c, rows, ", commit_interval: 20ms", "")
	cfg.Outputs = []enrichd.OutputConfig{{Name: "full", Type: "file", Path: "/dev/full", BufferSize: 4096}}
	cfg.Queue = enrichd.QueueConfig{Type: enrichd.QueueDisk, Path: filepath.Join(dir, "queue"), MaxBytes: 64 << 20, Sync: qsync}
	cfg.ShutdownTimeout = 2 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	// The group's offsets as the brokers receive them (one event a
	// record, from offset 0), with the moment each commit arrives; the
	// events fsynced into the queue, read over and over meanwhile.
	type commit struct {
		at    time.Time
		total int64
	}
	type sample struct {
		at     time.Time // when the read started
		synced float64
	}
	var mu sync.Mutex
	committed := map[int32]int64{}
	var commits []commit
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if oc := req.(*kmsg.OffsetCommitRequest); oc.Group == "enrichd" {
			mu.Lock()
			for _, tp := range oc.Topics {
				for _, p := range tp.Partitions {
					committed[p.Partition] = max(committed[p.Partition], p.Offset)
				}
			}
			var total int64
			for _, o := range committed {
				total += o
			}
			commits = append(commits, commit{time.Now(), total})
			mu.Unlock()
		}
		return nil, nil, false
	})
	var samples []sample
	stopSampling, sampled := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stopSampling:
				sampled <- nil
				return
			default:
			}
			at := time.Now()
			v, err := syncedEvents(r.d)
			if err != nil {
				sampled <- err
				return
			}
			samples = append(samples, sample{at, v})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	deadline := time.Now().Add(time.Minute)
	for c.Lag(t, "enrichd", "in") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("group lag %d, queue written %v: the events in the queue are not committed", c.Lag(t, "enrichd", "in"),
				metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`); got != n {
		t.Errorf("queue written %v, want %d", got, n)
	}
	close(stopSampling)
	if err := <-sampled; err != nil {
		t.Fatalf("reading the metrics: %v", err)
	}
	if got := metric(t, r.d, `enrichd_disk_queue_events_total{stage="synced"}`); got != n {
		t.Errorf("queue synced %v, want %d", got, n)
	}
	// The queue's count of events fsynced, read after a commit arrived,
	// is at least what the commit covers: read before the fsync the
	// commit ran ahead of, it fails.
	mu.Lock()
	checked := 0
	for i, cm := range commits {
		j := sort.Search(len(samples), func(j int) bool { return samples[j].at.After(cm.at) })
		if j == len(samples) {
			break
		}
		checked++
		if s := samples[j]; float64(cm.total) > s.synced {
			t.Errorf("commit %d: offsets of %d events committed, %v fsynced into the queue %v later",
				i+1, cm.total, s.synced, s.at.Sub(cm.at))
		}
	}
	mu.Unlock()
	if checked == 0 {
		t.Errorf("no offset commit of the group reached the brokers while the metrics were read")
	}
	t.Logf("%d offset commits checked against %d reads of the queue's fsynced events", checked, len(samples))
	if got := metric(t, r.d, "enrichd_events_out_total"); got != 0 {
		t.Errorf("events_out %v, although the only output wrote nothing", got)
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err == nil {
		t.Errorf("Run returned nil, although the output never wrote")
	}

	out := filepath.Join(dir, "out.json")
	cfg2 := kafkaConfig(t, dir, c, rows, "", "")
	cfg2.Outputs = []enrichd.OutputConfig{{Name: "file", Type: "file", Path: out}}
	cfg2.Queue = cfg.Queue
	if err := cfg2.Validate(); err != nil {
		t.Fatal(err)
	}
	r2 := startDaemon(t, cfg2)
	if got := waitMetric(t, r2.d, "enrichd_events_out_total", n); got != n {
		t.Fatalf("replayed %v events, want %d", got, n)
	}
	r2.stop(t)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l != "" {
			lines = append(lines, []byte(strings.TrimSuffix(l, "\n")))
		}
	}
	ty := kafkatest.Check(lines, customerID)
	if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 || len(lines) != n {
		t.Errorf("the replay wrote %d lines: %d events missing, %d bad", len(lines), len(miss), len(ty.Bad))
	}
}
