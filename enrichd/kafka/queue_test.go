package kafka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestKafkaCommitsWhatTheQueueHolds: with the persistent queue on
// (sync: 100 events), the Kafka input commits its offsets once the
// events are fsynced into the queue, although the only output (a file on
// /dev/full) delivers nothing: the group's lag drops to 0 while
// events_out stays 0. The daemon is then stopped (the shutdown times out
// on the output) and one with a working file output replays the queue:
// the file holds every event, which Kafka will never send again.
func TestKafkaCommitsWhatTheQueueHolds(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatal("no /dev/full")
	}
	const n, rows = 2000, 10
	c := kafkatest.Start(t, 1, 2, "in", "out")
	dir := t.TempDir()
	cfg := kafkaConfig(t, dir, c, rows, ", commit_interval: 20ms", "")
	cfg.Outputs = []enrichd.OutputConfig{{Name: "full", Type: "file", Path: "/dev/full", BufferSize: 4096}}
	cfg.Queue = enrichd.QueueConfig{Type: enrichd.QueueDisk, Path: filepath.Join(dir, "queue"), MaxBytes: 64 << 20, Sync: enrichd.QueueSync{Events: 100}}
	cfg.ShutdownTimeout = 2 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
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
	if got := metric(t, r.d, "enrichd_disk_queue_syncs_total"); got == 0 {
		t.Errorf("committed without an fsync of the queue")
	}
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
