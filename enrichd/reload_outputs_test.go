package enrichd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// outputsConfig is a configuration with a TCP input, no rules and the
// outputs given (YAML flow mappings, one a line).
func outputsConfig(outputs ...string) string {
	return fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
outputs:
%s
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, "  - "+strings.Join(outputs, "\n  - "))
}

// startOutputs runs a daemon from yml, written to dir/enrichd.yaml.
func startOutputs(t *testing.T, dir, yml string) (r *running, path string, logs *syncBuffer) {
	t.Helper()
	path = filepath.Join(dir, "enrichd.yaml")
	must(t, os.WriteFile(path, []byte(yml), 0o644))
	cfg, err := LoadConfig(path)
	must(t, err)
	logs = &syncBuffer{}
	d, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r = &running{d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r, path, logs
}

// seqs counts the events of each seq= in the files, failing on a line
// that has none or one out of [0, n).
func seqs(t *testing.T, n int, files ...string) (counts []int, per []int) {
	t.Helper()
	counts = make([]int, n)
	for _, f := range files {
		lines := readLines(t, f)
		per = append(per, len(lines))
		for _, l := range lines {
			msg, _ := decode(t, l)["message"].(string)
			seqText, _, _ := strings.Cut(strings.TrimPrefix(msg, "seq="), " ")
			seq, err := strconv.Atoi(seqText)
			if err != nil || seq < 0 || seq >= n {
				t.Fatalf("%s: bad seq in %s", f, l)
			}
			counts[seq]++
		}
	}
	return counts, per
}

// sendNumbered sends events seq=0..n-1 over one TCP connection, waiting
// on pause before event at (at < 0: never).
func sendNumbered(addr string, n, at int, pause <-chan struct{}) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(c, 1<<16)
	for i := range n {
		if i == at {
			if err := w.Flush(); err != nil {
				return err
			}
			<-pause
		}
		fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d\n", i)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return c.Close()
}

// waitTotal waits until the files hold n lines in all.
func waitTotal(t *testing.T, n int, files ...string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		got := 0
		for _, f := range files {
			got += len(readLines(t, f))
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines in %v, want %d", got, files, n)
		}
	}
}

// TestReloadOutputsUnderLoad streams numbered events over TCP while a
// reload moves the file output to another path: every event is in one
// of the two files exactly once, those sent after the reload in the new
// one; the output's counter (same name) goes on counting across the
// switch and agrees with the files; the reload is logged and counted.
func TestReloadOutputsUnderLoad(t *testing.T) {
	n := 200_000
	if raceEnabled || testing.Short() {
		n = 60_000
	}
	dir := t.TempDir()
	old, nw := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")
	r, path, logs := startOutputs(t, dir, outputsConfig(fmt.Sprintf("{name: out, type: file, path: %q}", old)))
	last := n - n/10
	reloaded := make(chan struct{})
	sendDone := make(chan error, 1)
	go func() { sendDone <- sendNumbered(r.d.Addr("tcp").String(), n, last, reloaded) }()
	for deadline := time.Now().Add(2 * time.Minute); r.d.eventsOut.Load() < uint64(n/10); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d events written, waiting for %d", r.d.eventsOut.Load(), n/10)
		}
	}
	must(t, os.WriteFile(path, []byte(outputsConfig(fmt.Sprintf("{name: out, type: file, path: %q}", nw))), 0o644))
	must(t, r.d.Reload(func() (*Config, error) { return LoadConfig(path) }))
	close(reloaded)
	must(t, <-sendDone)
	waitTotal(t, n, old, nw)
	if v := waitMetric(t, r.d, `enrichd_output_events_total{output="out",type="file"}`, float64(n)); v != float64(n) {
		t.Errorf("output out counted %v events, want %d", v, n)
	}
	if v := metric(t, r.d, `enrichd_config_reloads_total{result="success"}`); v != 1 {
		t.Errorf("successes counted %v, want 1", v)
	}
	r.stop(t)
	counts, per := seqs(t, n, old, nw)
	for seq, c := range counts {
		if c != 1 {
			t.Fatalf("event %d written %d times", seq, c)
		}
	}
	news, _ := seqs(t, n, nw)
	for seq := last; seq < n; seq++ {
		if news[seq] != 1 {
			t.Fatalf("event %d, sent after the reload, not in the new file", seq)
		}
	}
	if per[0] == 0 || per[1] < n-last {
		t.Fatalf("%d events in the old file, %d in the new", per[0], per[1])
	}
	t.Logf("%d events: %d in the old file, %d in the new", n, per[0], per[1])
	if !strings.Contains(logs.String(), `msg="configuration reloaded" rules=0 outputs_opened=1 outputs_closed=1`) {
		t.Errorf("no log line for the reload:\n%s", logs.String())
	}
}

// TestReloadOutputRefused: a reload to an output that cannot open (its
// file in a missing directory) is refused and logged, and the old output
// goes on receiving every event; a later reload that adds an output keeps
// the unchanged one as it is (the same output, its file open).
func TestReloadOutputRefused(t *testing.T) {
	const n = 20_000
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	keep := fmt.Sprintf("{name: out, type: file, path: %q}", old)
	r, path, logs := startOutputs(t, dir, outputsConfig(keep))
	load := func() (*Config, error) { return LoadConfig(path) }
	before := r.d.Output("out")
	reloaded := make(chan struct{})
	sendDone := make(chan error, 1)
	go func() { sendDone <- sendNumbered(r.d.Addr("tcp").String(), n, n/2, reloaded) }()
	waitLines(t, old, 1, time.Minute)
	must(t, os.WriteFile(path, []byte(outputsConfig(fmt.Sprintf("{name: out, type: file, path: %q}", filepath.Join(dir, "missing", "new.json")))), 0o644))
	err := r.d.Reload(load)
	var re *ReloadError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "output out:") {
		t.Fatalf("reload to a missing directory: %v", err)
	}
	if !strings.Contains(logs.String(), "configuration reload refused") {
		t.Fatalf("refusal not logged:\n%s", logs.String())
	}
	if r.d.Output("out") != before {
		t.Fatal("the refused reload replaced the output")
	}
	close(reloaded)
	must(t, <-sendDone)
	waitLines(t, old, n, 5*time.Minute)
	if v := metric(t, r.d, `enrichd_config_reloads_total{result="failure"}`); v != 1 {
		t.Errorf("failures counted %v, want 1", v)
	}

	// An added output; the unchanged one stays as it is.
	second := filepath.Join(dir, "second.json")
	must(t, os.WriteFile(path, []byte(outputsConfig(keep, fmt.Sprintf("{name: second, type: file, path: %q}", second))), 0o644))
	must(t, r.d.Reload(load))
	if r.d.Output("out") != before {
		t.Fatal("an unchanged output was replaced")
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0\n"))
	waitLines(t, second, 1, time.Minute)
	waitLines(t, old, n+1, time.Minute)
	c.Close()
	r.stop(t)
	counts, _ := seqs(t, n, old)
	for seq, c := range counts {
		if want := 1 + btoi(seq == 0); c != want {
			t.Fatalf("event %d in the old file %d times, want %d", seq, c, want)
		}
	}
	if !strings.Contains(logs.String(), `msg="configuration reloaded" rules=0 outputs_opened=1 outputs_closed=0`) {
		t.Errorf("no log line for the reload that added an output:\n%s", logs.String())
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestReloadOutputsQueue: with the persistent queue on, a reload that
// changes the outputs is refused, naming the queue, and the output stays.
func TestReloadOutputsQueue(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	queue := fmt.Sprintf("queue: {type: disk, path: %q, max_bytes: 64MiB}\n", filepath.Join(dir, "q"))
	r, path, _ := startOutputs(t, dir, outputsConfig(fmt.Sprintf("{name: out, type: file, path: %q}", out))+queue)
	before := r.d.Output("out")
	must(t, os.WriteFile(path, []byte(outputsConfig(fmt.Sprintf("{name: out, type: file, path: %q}", filepath.Join(dir, "other.json")))+queue), 0o644))
	err := r.d.Reload(func() (*Config, error) { return LoadConfig(path) })
	if err == nil || !strings.Contains(err.Error(), "persistent queue") {
		t.Fatalf("reload changing the outputs with the queue on: %v", err)
	}
	if r.d.Output("out") != before {
		t.Fatal("the refused reload replaced the output")
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0\n"))
	waitLines(t, out, 1, time.Minute)
	c.Close()
}
