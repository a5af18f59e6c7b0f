package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// vmHWM returns the peak resident set size of process pid, in bytes
// (VmHWM of /proc/PID/status).
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmHWM", pid)
	return 0
}

// TestHTTPBatchMemory sends one 16 MiB _batch request of short keys (3.4
// million keys, a 600 MB answer) to an enrichd process and reads the
// answer: it is complete and each element is the row of its key (as a
// small _batch request answers it), and the process's peak RSS
// (VmHWM) stays below 300 MB.
func TestHTTPBatchMemory(t *testing.T) {
	const rows, distinct, limit = 10_000, 10_007, 300 << 20 // keys 10000..10006 miss
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("id,name,note\n")
	for i := range rows {
		fmt.Fprintf(&csv, "%d,Name %d,note %d %s\n", i, i, i, strings.Repeat("n", 120))
	}
	src, err := source.NewCSVReader(strings.NewReader(csv.String()), "customers.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "enrichd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lutkit/lutkit/cmd/enrichd").CombinedOutput(); err != nil {
		t.Fatalf("building enrichd: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	conf := filepath.Join(dir, "enrichd.yaml")
	yml := fmt.Sprintf("tables: {path: %q}\nhttp: {listen: %q, request_timeout: 10m}\n", dir, addr)
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "enrichd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	cmd := exec.Command(bin, "--config", conf)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("enrichd: %v\n%s", err, logs())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("enrichd did not stop on SIGTERM: %v", <-exited)
		}
	}()
	base := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get(base + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("enrichd exited: %v\n%s", err, logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("enrichd not ready after 60 s\n%s", logs())
		}
	}
	client := &http.Client{Timeout: 10 * time.Minute}

	// The row of each key, as a small request answers it.
	var small strings.Builder
	for k := range distinct {
		fmt.Fprintf(&small, "%d\n", k)
	}
	resp, err := client.Post(base+"/v1/tables/customers/_batch", "text/plain", strings.NewReader(small.String()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var want []json.RawMessage
	if err := json.Unmarshal(b, &want); err != nil || len(want) != distinct {
		t.Fatalf("small batch: %d results, %v", len(want), err)
	}
	var row map[string]string
	if err := json.Unmarshal(want[4321], &row); err != nil || row["id"] != "4321" || row["name"] != "Name 4321" ||
		row["note"] != "note 4321 "+strings.Repeat("n", 120) {
		t.Fatalf("row 4321: %s (%v)", want[4321], err)
	}
	for k := rows; k < distinct; k++ {
		if string(want[k]) != "null" {
			t.Fatalf("key %d: %s, want null", k, want[k])
		}
	}
	before := vmHWM(t, cmd.Process.Pid)

	// One request as large as max_body_bytes (16 MiB) allows.
	body := make([]byte, 0, 16<<20)
	var keys []int
	for i := 0; ; i++ {
		k := i % distinct
		n := len(body)
		body = strconv.AppendInt(body, int64(k), 10)
		body = append(body, '\n')
		if len(body) > 16<<20 {
			body = body[:n]
			break
		}
		keys = append(keys, k)
	}
	start := time.Now()
	resp, err = client.Post(base+"/v1/tables/customers/_batch", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("16 MiB batch: %d %s", resp.StatusCode, b)
	}
	br := bufio.NewReaderSize(resp.Body, 1<<16)
	expect := func(what string, w []byte) {
		t.Helper()
		got := make([]byte, len(w))
		if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, w) {
			t.Fatalf("answer %s: got %q (%v), want %q", what, got, err, w)
		}
	}
	var answer int64
	expect("start", []byte("["))
	for i, k := range keys {
		if i > 0 {
			expect("separator "+strconv.Itoa(i), []byte(","))
		}
		expect("element "+strconv.Itoa(i), want[k])
		answer += int64(len(want[k])) + 1
	}
	expect("end", []byte("]\n"))
	if n, _ := io.Copy(io.Discard, br); n != 0 {
		t.Fatalf("%d bytes after the answer", n)
	}
	peak := vmHWM(t, cmd.Process.Pid)
	t.Logf("%d keys in %d bytes, a %d-byte answer in %v; enrichd's VmHWM %d MiB before, %d MiB after",
		len(keys), len(body), answer+2, time.Since(start).Round(time.Millisecond), before>>20, peak>>20)
	if peak >= limit {
		t.Errorf("enrichd's peak RSS (VmHWM) %d MiB after a 16 MiB _batch request, want below %d MiB", peak>>20, limit>>20)
	}
}
