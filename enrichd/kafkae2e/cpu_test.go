package kafkae2e

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmarks report enrichd's CPU per event in the steady state:
// from the moment its .mmdb tables' networks are counted (the walk of a
// city database's tree that its first metrics scrape starts, a fraction
// of a second of CPU once per loaded version, which a benchmark of a few
// seconds would otherwise count against its events) until every event
// is out. They also report it over the process's whole life (start,
// group join, that walk, shutdown), as the figures before 2026-12-03 did.

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ: 100 on
// Linux for every architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuNow returns the user and system CPU time of the running process.
func (p *proc) cpuNow(t testing.TB) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces: state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", p.cmd.Process.Pid, b)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", p.cmd.Process.Pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}

// steady waits until p has counted the networks of its geo table, and
// returns its CPU time and the value of sample then.
func (p *proc) steady(t testing.TB, sample string) (cpu time.Duration, out float64) {
	t.Helper()
	const geo = `enrichd_table_rows{kind="mmdb",table="geo"}`
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		m := p.metrics()
		if m[geo] > 0 {
			return p.cpuNow(t), m[sample]
		}
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("%s: no %s after a minute (exited: %v)", p.name, geo, p.exited())
		}
	}
}

// report sets the benchmark's CPU figures: events per CPU-second in the
// steady state (events out since steady, over the CPU since), and over
// the whole life of the exited process.
func report(b *testing.B, p *proc, cpu0, cpu1 time.Duration, out0 float64) {
	b.Helper()
	if cpu1 > cpu0 {
		b.ReportMetric((float64(b.N)-out0)/(cpu1-cpu0).Seconds(), "events/cpu-s")
	}
	b.ReportMetric(float64(b.N)/p.cpu().Seconds(), "events/life-cpu-s")
}
