package enrichd

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

// QueueType is the kind of the persistent queue.
type QueueType string

// QueueDisk is the one kind: segment files in a directory.
const QueueDisk QueueType = "disk"

// Validate checks the value.
func (t QueueType) Validate() error { return config.OneOf(t, QueueDisk) }

// DefaultQueueSyncInterval is the queue's sync when none is given.
const DefaultQueueSyncInterval = 500 * time.Millisecond

// QueueSync is when the queue fsyncs what it appended, and so when the
// inputs that wait for it (Kafka's commit) are told their events are
// safe: every N events, every interval, or never (none: safe from a
// crash of enrichd, kill -9 included, not from a power loss).
type QueueSync struct {
	Events   int           // fsync once this many events are appended (and when no more wait)
	Interval time.Duration // fsync this often
	None     bool          // never fsync
}

// String is the setting as written.
func (s QueueSync) String() string {
	switch {
	case s.None:
		return "none"
	case s.Events > 0:
		return strconv.Itoa(s.Events)
	}
	return s.Interval.String()
}

// QueueConfig is the queue: section, the optional persistent queue
// between the workers and the outputs.
type QueueConfig struct {
	At       config.At
	Type     QueueType
	Path     string // the directory of the segment files
	MaxBytes int    // bound of the segment files; a full queue makes the inputs wait
	Sync     QueueSync
}

// Enabled says whether the configuration has a queue.
func (q *QueueConfig) Enabled() bool { return q.Type != "" }

func (q *QueueConfig) decode(d *config.Decoder, n *yaml.Node, dir string) {
	d.Mapping(n, "queue", &q.At, config.Keys{
		"type":      func(v *yaml.Node) { s, _ := d.String(v, "queue.type"); q.Type = QueueType(s) },
		"path":      func(v *yaml.Node) { p, _ := d.String(v, "queue.path"); q.Path = resolve(dir, p) },
		"max_bytes": func(v *yaml.Node) { q.MaxBytes, _ = d.Size(v, "queue.max_bytes") },
		"sync":      func(v *yaml.Node) { q.Sync = decodeQueueSync(d, v) },
	})
}

// decodeQueueSync reads "none", a number of events or a duration.
func decodeQueueSync(d *config.Decoder, v *yaml.Node) QueueSync {
	if v.Kind == yaml.ScalarNode {
		if v.Value == "none" {
			return QueueSync{None: true}
		}
		if n, err := strconv.Atoi(v.Value); err == nil {
			if n <= 0 {
				d.Errorf(v, "queue.sync", "a number of events must be positive, not %d", n)
			}
			return QueueSync{Events: n}
		}
		if iv, err := time.ParseDuration(v.Value); err == nil && iv > 0 {
			return QueueSync{Interval: iv}
		}
	}
	d.Errorf(v, "queue.sync", "must be a number of events (1000), a duration (500ms) or none, not %q", v.Value)
	return QueueSync{}
}

// minQueueBatches is how many of the largest batches max_bytes must hold
// at least.
const minQueueBatches = 32

// Validate checks the queue section; given says whether it was written.
func (q *QueueConfig) Validate(s config.Scope, given bool, p *PipelineConfig) {
	if !given && !q.Enabled() {
		return
	}
	s.Require("type", q.Type != "", string(QueueDisk))
	if q.Type != "" {
		s.Check("type", q.Type.Validate())
	}
	s.Require("path", q.Path != "", "a directory for the queue's segment files")
	s.Require("max_bytes", q.MaxBytes > 0, "the size the queue's files may take (1GiB)")
	if least := minQueueBatches * 3 * p.BatchBytes; q.MaxBytes > 0 && q.MaxBytes < least {
		s.Errorf("max_bytes", "must hold at least %d batches of enriched lines: %s or more (pipeline.batch_bytes is %d)",
			minQueueBatches, sizeText(least), p.BatchBytes)
	}
}

// sizeText writes n bytes as a size the configuration reads.
func sizeText(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", (n+1023)>>10)
}
