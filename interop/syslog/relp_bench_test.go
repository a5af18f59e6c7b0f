package syslog

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRELPReceivers sends the same numbered events with the same
// RELP sender (relpSend: one session, a window of relpWindow) to
// enrichd's relp input (writing JSON lines to a file, no rules) and to
// rsyslog's imrelp (writing RSYSLOG_FileFormat lines with omfile), one
// after the other in each iteration, each until its file holds every
// event. It reports each receiver's events/s and events per CPU-second
// (the receiving process's user and system time, from /proc), and
// enrichd's over rsyslog's as a ratio of the same run. imrelp answers once
// an event is in rsyslog's memory queue, enrichd once its output has
// written it.
func BenchmarkRELPReceivers(b *testing.B) {
	rsyslogRELP(b)
	const n = 1_000_000
	evs := relpEvents(n)
	dir := b.TempDir()
	enrichdOut := filepath.Join(dir, "enrichd.json")
	enrichdAddr := "127.0.0.1:" + freePort(b)
	d := startRELPEnrichd(b, "enrichd", fmt.Sprintf(`inputs:
  - {name: relp, type: relp, listen: %q}
outputs:
  - {type: file, path: %q}
`, enrichdAddr, enrichdOut))
	rsOut := filepath.Join(dir, "rsyslog.log")
	rsAddr := "127.0.0.1:" + freePort(b)
	rs := startRsyslog(b, dir, fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k")
module(load="imrelp")
main_queue(queue.size="400000")
input(type="imrelp" address="127.0.0.1" port=%q)
action(type="omfile" file=%q template="RSYSLOG_FileFormat")
`, dir, rsAddr[len("127.0.0.1:"):], rsOut), rsAddr)

	type receiver struct {
		name, addr string
		pid        int
		out        *lineCounter
		wall, cpu  float64
	}
	rcvs := []*receiver{
		{name: "enrichd", addr: enrichdAddr, pid: d.cmd.Process.Pid, out: &lineCounter{path: enrichdOut}},
		{name: "rsyslog-imrelp", addr: rsAddr, pid: rs.cmd.Process.Pid, out: &lineCounter{path: rsOut}},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range rcvs {
			want := r.out.count() + n
			cpu0, t0 := cpuSeconds(b, r.pid), time.Now()
			c, err := net.Dial("tcp", r.addr)
			if err != nil {
				b.Fatal(err)
			}
			if err := relpSend(c, evs, relpWindow); err != nil {
				b.Fatalf("%s: %v", r.name, err)
			}
			for r.out.count() < want {
				if time.Since(t0) > 5*time.Minute {
					b.Fatalf("%s wrote %d of %d lines", r.name, r.out.count(), want)
				}
				time.Sleep(5 * time.Millisecond)
			}
			r.wall += time.Since(t0).Seconds()
			r.cpu += cpuSeconds(b, r.pid) - cpu0
		}
	}
	b.StopTimer()
	total := float64(n * b.N)
	for _, r := range rcvs {
		b.ReportMetric(total/r.wall, r.name+"-events/s")
		b.ReportMetric(total/r.cpu, r.name+"-events/cpu-s")
	}
	b.ReportMetric((total/rcvs[0].wall)/(total/rcvs[1].wall), "ratio-events/s")
	b.ReportMetric((total/rcvs[0].cpu)/(total/rcvs[1].cpu), "ratio-events/cpu-s")
	b.ReportMetric(0, "ns/op")
}
