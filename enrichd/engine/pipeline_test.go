package engine

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// benchSetup builds a pipeline with two rules (customers .lut, city
// MMDB) and a batch of n RFC 5424 events like gen-events.py's.
func benchSetup(tb testing.TB, rows, n int) (*Engine, *Batch, *tables.Set) {
	return benchSetupWith(tb, rows, n, func(i int) (int, string) {
		src := fmt.Sprintf("%d.%d.%d.%d", 1+i*7%223, i*13%256, i*29%256, 1+i%250)
		if i%3 == 0 {
			src = fmt.Sprintf("10.%d.%d.%d", i%256, i*3%256, 1+i%250)
		}
		return 1 + (i*7919)%rows, src
	})
}

// benchSetupUniform is benchSetup with keys and addresses drawn as
// gen-events.py draws them: customers uniform over the table, a quarter
// of the addresses in 10/8 and 192.168/16, the rest uniform public IPv4.
// Few events repeat a network, so caches help only as much as on the peer
// benchmark's data.
func benchSetupUniform(tb testing.TB, rows, n int) (*Engine, *Batch, *tables.Set) {
	rng := rand.New(rand.NewPCG(7, 7))
	return benchSetupWith(tb, rows, n, func(int) (int, string) {
		var src string
		switch rng.IntN(8) {
		case 0:
			src = fmt.Sprintf("10.%d.%d.%d", rng.IntN(256), rng.IntN(256), 1+rng.IntN(254))
		case 1:
			src = fmt.Sprintf("192.168.%d.%d", rng.IntN(256), 1+rng.IntN(254))
		default:
			src = fmt.Sprintf("%d.%d.%d.%d", 1+rng.IntN(223), rng.IntN(256), rng.IntN(256), 1+rng.IntN(254))
		}
		return 1 + rng.IntN(rows), src
	})
}

// benchSetupWith is benchSetup with event i's customer and address from
// gen.
func benchSetupWith(tb testing.TB, rows, n int, gen func(i int) (cust int, src string)) (*Engine, *Batch, *tables.Set) {
	tb.Helper()
	dir := tb.TempDir()
	buildCustomers(tb, filepath.Join(dir, "customers.lut"), rows, 1)
	linkMMDB(tb, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	// Every column, as the peer benchmark needs.
	p, err := New(testRules(nil), testOptions, set)
	if err != nil {
		tb.Fatal(err)
	}
	b := &Batch{Format: Syslog}
	for i := range n {
		cust, src := gen(i)
		b.Add([]byte(event(i, cust, src)), 0)
	}
	return p, b, set
}

func TestPipelineEncodes(t *testing.T) {
	p, b, set := benchSetup(t, 1000, 10)
	defer set.Close()
	w := p.NewWorker(512)
	out := w.process(b, nil, time.Now())
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		m := decode(t, l)
		cust := 1 + (i*7919)%1000
		if got := get(m, "customer.Customer Id"); got != fmt.Sprintf("C%d-1", cust) {
			t.Errorf("line %d: customer id %v: %s", i, got, l)
		}
		if get(m, "host.name") == nil || get(m, "log.syslog.severity.code") != 6.0 || get(m, "process.pid") == nil {
			t.Errorf("line %d: header fields missing: %s", i, l)
		}
		if i%3 != 0 && get(m, "source.geo.country_iso_code") == nil {
			t.Errorf("line %d: no geo: %s", i, l)
		}
	}
}

// TestPipelineZeroAlloc proves the steady state allocates nothing.
func TestPipelineZeroAlloc(t *testing.T) {
	p, b, set := benchSetup(t, 10000, 512)
	defer set.Close()
	w := p.NewWorker(512)
	msgs := b.Msgs
	out := make([]byte, 0, 1<<20)
	now := time.Now()
	allocs := testing.AllocsPerRun(20, func() {
		b.Msgs = msgs
		out = w.process(b, out[:0], now)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch of 512, want 0", allocs)
	}
}

// BenchmarkPipeline: one op is one event (parse, extract, two lookups,
// JSON), run in batches of 512 against a 2M-row table. cycle8k cycles
// 8,192 events (rows and caches warm); uniform runs 500,000 events drawn
// as gen-events.py draws them, as on the peer benchmark.
func BenchmarkPipeline(b *testing.B) {
	rows := 2_000_000
	if testing.Short() {
		rows = 100_000
	}
	b.Run("cycle8k", func(b *testing.B) {
		p, bt, set := benchSetup(b, rows, 8192)
		defer set.Close()
		benchPipeline(b, p, bt)
	})
	b.Run("uniform", func(b *testing.B) {
		p, bt, set := benchSetupUniform(b, rows, 500_000)
		defer set.Close()
		benchPipeline(b, p, bt)
	})
}

func benchPipeline(b *testing.B, p *Engine, bt *Batch) {
	w := p.NewWorker(512)
	all := bt.Msgs
	out := make([]byte, 0, 4<<20)
	now := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(bt.Buf) / len(all)))
	b.ResetTimer()
	done := 0
	for done < b.N {
		n := min(512, b.N-done)
		off := done % (len(all) - 512)
		bt.Msgs = all[off : off+n]
		out = w.process(bt, out[:0], now)
		done += n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}

// BenchmarkEncode: one op is the JSON encoding of one event of the
// benchmark batch after its lookups (rows in cache), without parsing and
// lookups.
func BenchmarkEncode(b *testing.B) {
	p, bt, set := benchSetup(b, 100_000, 512)
	defer set.Close()
	w := p.NewWorker(512)
	out := w.process(bt, make([]byte, 0, 1<<20), time.Now())
	b.ReportAllocs()
	b.SetBytes(int64(len(out) / 512))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%512 == 0 {
			out = out[:0]
		}
		out = w.encode(i%512, &w.evs[i%512], out)
	}
}

// TestPipelineIPCache: answers from the network cache equal lookups.
func TestPipelineIPCache(t *testing.T) {
	p, b, set := benchSetup(t, 1000, 2000)
	defer set.Close()
	msgs := b.Msgs
	cold := p.NewWorker(512).process(b, nil, time.Unix(0, 0))
	w := p.NewWorker(512)
	b.Msgs = msgs
	w.process(b, nil, time.Unix(0, 0))
	b.Msgs = msgs
	warm := w.process(b, nil, time.Unix(0, 0))
	if string(cold) != string(warm) {
		t.Fatal("cached mmdb answers differ from lookups")
	}
}

// TestIPCacheAdapts: the network cache turns itself off after a window of
// addresses it rarely answers, is tried again after ipCacheRest addresses,
// and stays on while it answers often.
func TestIPCacheAdapts(t *testing.T) {
	var c ipCache
	for range ipCacheWindow / 512 {
		if !c.on() {
			t.Fatal("off before a whole window was measured")
		}
		c.account(512, 512/ipCacheMinRate-1)
	}
	if c.on() {
		t.Fatalf("on after a window with a hit rate under 1/%d", ipCacheMinRate)
	}
	for range ipCacheRest / 512 {
		if c.on() {
			t.Fatal("on again before ipCacheRest addresses")
		}
		c.account(512, 0)
	}
	if !c.on() {
		t.Fatal("still off after ipCacheRest addresses")
	}
	for range 4 * ipCacheWindow / 512 {
		c.account(512, 512/ipCacheMinRate)
		if !c.on() {
			t.Fatalf("off with a hit rate of 1/%d", ipCacheMinRate)
		}
	}

	// Addresses drawn uniformly rarely share a network: the rule's cache
	// turns off, and the answers stay those of a fresh worker.
	p, b, set := benchSetupUniform(t, 1000, 2*ipCacheWindow)
	defer set.Close()
	msgs := b.Msgs
	w := p.NewWorker(512)
	got := w.process(b, nil, time.Unix(0, 0))
	c2 := &w.rw[1].cache
	if c2.on() {
		t.Fatalf("cache still on after %d uniform addresses", len(msgs))
	}
	b.Msgs = msgs[len(msgs)-1024:]
	again := w.process(b, nil, time.Unix(0, 0))
	b.Msgs = msgs[len(msgs)-1024:]
	fresh := p.NewWorker(512).process(b, nil, time.Unix(0, 0))
	if string(again) != string(fresh) || !strings.HasSuffix(string(got), string(fresh)) {
		t.Fatal("answers with the cache off differ from a fresh worker's")
	}
}
