// Package bstat holds the small helpers shared by the peer-bench programs:
// reading the customers CSV, extracting key=value tokens from an event line,
// and reporting process statistics as one JSON line on stderr.
package bstat

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fields are the customer columns appended to an event, in CSV order after Index.
var Fields = []string{"customer_id", "first_name", "last_name", "company", "city",
	"country", "phone1", "phone2", "email", "subscription_date", "website"}

// ReadCSV calls fn(index, rest) for every data row of the customers CSV.
// rest aliases a fresh slice per row (encoding/csv without ReuseRecord).
func ReadCSV(path string, fn func(idx string, rest []string)) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	if _, err := r.Read(); err != nil { // header
		return 0, err
	}
	n := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		fn(rec[0], rec[1:])
		n++
	}
}

// Token returns the value of `name=` (e.g. "cust=") in line, up to the next space.
func Token(line []byte, name string) []byte {
	i := bytes.Index(line, []byte(name))
	if i < 0 {
		return nil
	}
	v := line[i+len(name):]
	if j := bytes.IndexAny(v, " \n\r"); j >= 0 {
		v = v[:j]
	}
	return v
}

// RSSKB returns VmRSS of this process in KiB.
func RSSKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return -1
}

// CPUSeconds returns user+sys CPU seconds of this process so far.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// Report writes one JSON object line to stderr: the given fields plus
// rss_kb, cpu_s, heap_inuse, num_gc and gc_pause_total_s.
func Report(event string, start time.Time, extra map[string]any) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := map[string]any{
		"event":            event,
		"elapsed_s":        time.Since(start).Seconds(),
		"rss_kb":           RSSKB(),
		"cpu_s":            CPUSeconds(),
		"heap_inuse":       ms.HeapInuse,
		"heap_sys":         ms.HeapSys,
		"num_gc":           ms.NumGC,
		"gc_pause_total_s": float64(ms.PauseTotalNs) / 1e9,
	}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	os.Stderr.Write(append(b, '\n'))
}

// Out buffers a program's enriched lines. bufio.Writer's errors are
// sticky, so a failed write is reported by Flush, which every program
// checks before it reports "done".
type Out struct{ w *bufio.Writer }

// NewOut buffers writes to w in 1 MiB.
func NewOut(w io.Writer) *Out { return &Out{bufio.NewWriterSize(w, 1<<20)} }

// Write appends b; an error shows at Flush.
func (o *Out) Write(b []byte) { _, _ = o.w.Write(b) }

// WriteString appends s; an error shows at Flush.
func (o *Out) WriteString(s string) { _, _ = o.w.WriteString(s) }

// Flush writes what is buffered and returns the first error of any write.
func (o *Out) Flush() error { return o.w.Flush() }
