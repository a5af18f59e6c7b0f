package enrichd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// The lag metric: at each scrape the input asks the brokers for the
// group's committed offset of every partition assigned to it (OffsetFetch,
// the coordinator's answer) and then for their high watermarks
// (ListOffsets), and exports the difference for each, fetched from or not.
// Asked in that order, a lag of 0 means the group had committed every
// event written before the high watermarks were read.

var (
	mKafkaDeliveredAge = MetricDesc("kafka_delivered_uncommitted_seconds", "How long the oldest event every output delivered has waited for its offset to be committed (0: none waits).", "input")
	mKafkaOffsetsAge   = MetricDesc("kafka_lag_age_seconds", "Seconds since the offsets behind kafka_consumer_lag were read from the brokers (they are read at each scrape; this grows while the brokers cannot be reached).", "input")
)

// lagScrapeTimeout bounds the reads of a scrape.
const lagScrapeTimeout = 2 * time.Second

// lagState is what the lag metric knows of the partitions assigned to the
// input (under kafkaInput.mu).
type lagState struct {
	parts     []topicPart // of the last generation
	committed map[topicPart]int64
	end       map[topicPart]int64
	start     map[topicPart]int64 // log start offset, for partitions without a committed offset
	at        time.Time           // of the last read
}

// assigned makes the partitions of a new generation those of the metric.
func (l *lagState) assigned(parts []topicPart) { l.parts = parts }

// refreshLag reads the committed offsets, then the high watermarks (and,
// where nothing is committed and start_offset is earliest, the log start)
// of the assigned partitions.
func (k *kafkaInput) refreshLag() error {
	k.mu.Lock()
	parts := k.lag.parts
	k.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lagScrapeTimeout)
	defer cancel()
	committed, err := k.group.committedOffsets(ctx, parts)
	if err != nil {
		return err
	}
	end, err := k.listOffsets(ctx, parts, kafka.LastOffset)
	if err != nil {
		return err
	}
	var fromStart []topicPart
	if k.kc.StartOffset != "latest" {
		for _, tp := range parts {
			if committed[tp] < 0 {
				fromStart = append(fromStart, tp)
			}
		}
	}
	start := map[topicPart]int64{}
	if len(fromStart) > 0 {
		if start, err = k.listOffsets(ctx, fromStart, kafka.FirstOffset); err != nil {
			return err
		}
	}
	k.mu.Lock()
	k.lag.committed, k.lag.end, k.lag.start, k.lag.at = committed, end, start, time.Now()
	for tp, c := range committed {
		if cur, ok := k.committed[tp]; !ok || c > cur {
			k.committed[tp] = c
		}
	}
	k.mu.Unlock()
	return nil
}

// listOffsets asks the partitions' leaders for their first or last
// (high watermark) offsets.
func (k *kafkaInput) listOffsets(ctx context.Context, parts []topicPart, which int64) (map[topicPart]int64, error) {
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, tp := range parts {
		req.Topics[tp.topic] = append(req.Topics[tp.topic], kafka.OffsetRequest{Partition: tp.partition, Timestamp: which})
	}
	var resp *kafka.ListOffsetsResponse
	err := retryConn(ctx, func() (err error) {
		resp, err = k.cl.ListOffsets(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[topicPart]int64, len(parts))
	for topic, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("%s/%d: %w", topic, p.Partition, p.Error)
			}
			// kafka-go files an answer under the timestamp the broker
			// echoes, which is -1 (LastOffset) for either question.
			o := p.LastOffset
			if which == kafka.FirstOffset && o < 0 {
				o = p.FirstOffset
			}
			out[topicPart{topic, p.Partition}] = o
		}
	}
	for _, tp := range parts {
		if _, ok := out[tp]; !ok {
			return nil, fmt.Errorf("%s: %w", tp, errors.New("no offset in the answer"))
		}
	}
	return out, nil
}

// collectLag exports the lag and committed offset of each assigned
// partition, the age of the offsets they come from, and the age of the
// oldest delivered event not committed. When the brokers cannot be asked,
// the last answers stand, raised by what the input knows since: the
// high watermarks its fetches saw and the commits it made.
func (k *kafkaInput) collectLag(gauge func(*prometheus.Desc, float64, ...string)) {
	name := k.cfg.Name
	if err := k.refreshLag(); err != nil {
		k.log.Debug("kafka: reading the offsets for the lag metric", "err", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	l := &k.lag
	if l.at.IsZero() {
		return
	}
	gauge(mKafkaOffsetsAge, time.Since(l.at).Seconds(), name)
	for _, tp := range l.parts {
		end, ok := l.end[tp]
		if !ok {
			continue
		}
		if f := k.fetchers[tp]; f != nil {
			end = max(end, f.hwm.Load())
		}
		committed := l.committed[tp]
		if c, ok := k.committed[tp]; ok {
			committed = max(committed, c)
		}
		next := committed
		if next < 0 {
			// Nothing committed: the group starts at the log start
			// (earliest), or where this member started (latest).
			next = end
			if s, ok := l.start[tp]; ok {
				next = s
			} else if f := k.fetchers[tp]; f != nil && f.first.Load() >= 0 {
				next = f.first.Load()
			}
		}
		p := strconv.Itoa(tp.partition)
		gauge(mKafkaLag, float64(max(0, end-next)), name, tp.topic, p)
		if committed >= 0 {
			gauge(mKafkaCommitted, float64(committed), name, tp.topic, p)
		}
	}
}
