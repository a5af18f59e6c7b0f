package kafka

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/kafkatest"
)

// buildCustomers compiles an n-row customers table to path.
var buildCustomers = kafkatest.BuildCustomers

type running struct {
	d      *enrichd.Daemon
	cancel context.CancelFunc
	done   chan error
}

// startDaemon runs a daemon of cfg until the test ends (or stop).
func startDaemon(t testing.TB, cfg *enrichd.Config) *running {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	d, err := enrichd.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("daemon did not stop")
	}
}

// newFails checks that a daemon of cfg does not start, and returns the
// error; a daemon that starts is run and stopped at once.
func newFails(t testing.TB, cfg *enrichd.Config) error {
	t.Helper()
	d, err := enrichd.New(cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = d.Run(ctx)
	}
	return err
}

// metric returns the value of one sample from /metrics, e.g.
// `enrichd_kafka_produced_total{output="kafka"}`.
func metric(t testing.TB, d *enrichd.Daemon, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, sample+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(l[len(sample):]), 64)
			return v
		}
	}
	return 0
}
