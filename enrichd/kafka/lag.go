package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/lutkit/lutkit/enrichd"
)

// The lag metric: at each scrape the input asks the brokers for the
// group's committed offsets (OffsetFetch, the coordinator's answer) and
// then for the high watermarks of the partitions assigned to it
// (ListOffsets), and exports the difference for each, fetched from or
// not. Asked in that order, a lag of 0 means the group had committed
// every event written before the high watermarks were read.

var (
	mDeliveredAge = enrichd.MetricDesc("kafka_delivered_uncommitted_seconds", "How long the oldest event every output delivered has waited for its offset to be committed (0: none waits).", "input")
	mOffsetsAge   = enrichd.MetricDesc("kafka_lag_age_seconds", "Seconds since the offsets behind kafka_consumer_lag were read from the brokers (they are read at each scrape; this grows while the brokers cannot be reached).", "input")
)

// lagScrapeTimeout bounds the reads of a scrape.
const lagScrapeTimeout = 2 * time.Second

// lagState is what the lag metric knows of the partitions assigned to the
// input (under input.mu).
type lagState struct {
	parts     []topicPart // assigned now, sorted
	committed map[topicPart]int64
	end       map[topicPart]int64
	start     map[topicPart]int64 // log start offset, for partitions without a committed offset
	at        time.Time           // of the last read
}

// assigned makes the partitions the input owns those of the metric.
func (l *lagState) assigned(owned map[topicPart]bool) {
	l.parts = l.parts[:0:0]
	for tp := range owned {
		l.parts = append(l.parts, tp)
	}
	slices.SortFunc(l.parts, func(a, b topicPart) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
}

// refreshLag reads the committed offsets, then the high watermarks (and,
// where nothing is committed and start_offset is earliest, the log start)
// of the assigned partitions.
func (k *input) refreshLag() error {
	k.mu.Lock()
	parts := k.lag.parts
	k.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	topics := map[string]bool{}
	for _, tp := range parts {
		topics[tp.topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lagScrapeTimeout)
	defer cancel()
	got, err := k.adm.FetchOffsets(ctx, k.kc.Group)
	if err == nil {
		err = got.Error()
	}
	if err != nil {
		return err
	}
	committed := make(map[topicPart]int64, len(parts))
	for _, tp := range parts {
		committed[tp] = -1
		if o, ok := got.Lookup(tp.topic, tp.partition); ok && o.Err == nil {
			committed[tp] = o.At
		}
	}
	ends, err := k.adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return err
	}
	end, err := listed(ends, parts)
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
		starts, err := k.adm.ListStartOffsets(ctx, names...)
		if err != nil {
			return err
		}
		if start, err = listed(starts, fromStart); err != nil {
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

// listed picks the offsets of parts from a listing.
func listed(l kadm.ListedOffsets, parts []topicPart) (map[topicPart]int64, error) {
	out := make(map[topicPart]int64, len(parts))
	for _, tp := range parts {
		o, ok := l.Lookup(tp.topic, tp.partition)
		if !ok {
			return nil, fmt.Errorf("%s: %w", tp, errors.New("no offset in the answer"))
		}
		if o.Err != nil {
			return nil, fmt.Errorf("%s: %w", tp, o.Err)
		}
		out[tp] = o.Offset
	}
	return out, nil
}

// collectLag exports the lag and committed offset of each assigned
// partition, and the age of the offsets they come from. When the brokers
// cannot be asked, the last answers stand, raised by what the input knows
// since: the high watermarks its fetches saw and the commits it made.
func (k *input) collectLag(gauge func(*prometheus.Desc, float64, ...string)) {
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
	gauge(mOffsetsAge, time.Since(l.at).Seconds(), name)
	for _, tp := range l.parts {
		end, ok := l.end[tp]
		if !ok {
			continue
		}
		if h, ok := k.hwm[tp]; ok {
			end = max(end, h)
		}
		committed, ok := l.committed[tp]
		if !ok {
			committed = -1
		}
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
			} else if f, ok := k.first[tp]; ok {
				next = f
			}
		}
		p := strconv.Itoa(int(tp.partition))
		gauge(mLag, float64(max(0, end-next)), name, tp.topic, p)
		if committed >= 0 {
			gauge(mCommitted, float64(committed), name, tp.topic, p)
		}
	}
}
