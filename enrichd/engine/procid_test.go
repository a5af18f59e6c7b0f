package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestProcIDNumber: a PROCID is written as the number process.pid only
// when it is a JSON number (digits, no leading zero but "0"); any other,
// such as 007, as the string log.syslog.procid. Both forms of syslog.
func TestProcIDNumber(t *testing.T) {
	p, err := New(nil, testOptions, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := p.NewWorker(16)
	cases := []struct {
		procid string
		pid    any // float64 for a number, nil when absent
		str    any // string, nil when absent
	}{
		{"0", 0.0, nil},
		{"7", 7.0, nil},
		{"1234", 1234.0, nil},
		{"007", nil, "007"},
		{"00", nil, "00"},
		{"0123456789", nil, "0123456789"},
		{"123456789012345678", 123456789012345678.0, nil},
		{"1234567890123456789", nil, "1234567890123456789"},
		{"12a", nil, "12a"},
		{"-1", nil, "-1"},
	}
	for _, c := range cases {
		for _, msg := range []string{
			"<14>1 2024-05-01T10:00:00Z h app " + c.procid + " m - text",
			"<14>May  1 10:00:00 h app[" + c.procid + "]: text",
		} {
			b := &Batch{Format: Syslog}
			b.Add([]byte(msg), 0)
			out := w.process(b, nil, time.Unix(0, 0))
			line := strings.TrimSuffix(string(out), "\n")
			if !json.Valid([]byte(line)) {
				t.Fatalf("%q: invalid JSON: %s", msg, line)
			}
			m := decode(t, line)
			if got := get(m, "process.pid"); got != c.pid {
				t.Errorf("%q: process.pid %v (%T), want %v: %s", msg, got, got, c.pid, line)
			}
			if got := get(m, "log.syslog.procid"); got != c.str {
				t.Errorf("%q: log.syslog.procid %v, want %v: %s", msg, got, c.str, line)
			}
		}
	}
}
