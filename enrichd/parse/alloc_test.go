package parse

import (
	"fmt"
	"testing"
	"time"
)

// loopReader serves data over and over, like a busy connection.
type loopReader struct {
	data []byte
	off  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

const (
	sample5424 = "<134>1 2026-11-30T05:24:00.000Z web-18 app 24065 login - cust=679127 src=102.24.37.211 action=login"
	sample3164 = "<134>Nov 30 05:24:00 web-18 app[24065]: cust=679127 src=102.24.37.211 action=login"
)

func TestZeroAllocs(t *testing.T) {
	check := func(name string, fn func()) {
		t.Helper()
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, n)
		}
	}

	nl := NewFramer(&loopReader{data: []byte(sample5424 + "\n" + sample3164 + "\r\n")}, 8192)
	check("Framer.Next newline", func() {
		if _, _, err := nl.Next(); err != nil {
			t.Fatal(err)
		}
	})
	oc := NewFramer(&loopReader{data: fmt.Appendf(nil, "%d %s%d %s", len(sample5424), sample5424, len(sample3164), sample3164)}, 8192)
	check("Framer.Next octet", func() {
		if msg, _, err := oc.Next(); err != nil || (len(msg) != len(sample5424) && len(msg) != len(sample3164)) {
			t.Fatalf("%q %v", msg, err)
		}
	})
	tr := NewFramer(&loopReader{data: []byte(sample5424 + "\n")}, 50)
	check("Framer.Next truncating", func() {
		if _, trunc, err := tr.Next(); err != nil || !trunc {
			t.Fatal(err, trunc)
		}
	})

	var ev Event
	for _, s := range append([]string{sample5424, sample3164, dirty5424, "garbage"}, forms3164...) {
		msg := []byte(s)
		check("ParseSyslog "+s, func() { _ = ParseSyslog(msg, &ev) })
	}
	sd := []byte(`[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"]`)
	n := 0
	check("EachSDParam", func() { EachSDParam(sd, func(id, name, value []byte) bool { n++; return true }) })

	msg := []byte(sample5424)
	_ = ParseSyslog(msg, &ev)
	ts := make([]byte, 0, 64)
	now := time.Now()
	check("AppendTimestampRFC3339", func() { ts = AppendTimestampRFC3339(ts[:0], &ev, now) })
	_ = ParseSyslog([]byte(sample3164), &ev)
	check("AppendTimestampRFC3339 3164", func() { ts = AppendTimestampRFC3339(ts[:0], &ev, now) })

	x := NewExtractor([]string{"cust", "src"})
	vals := make([][]byte, 2)
	check("Extractor.Extract", func() { x.Extract(ev.Message, vals) })
	many := NewExtractor([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "cust", "src"})
	vals11 := make([][]byte, 11)
	check("Extractor.Extract map", func() { many.Extract(ev.Message, vals11) })
	key := []byte("src")
	check("KV", func() { KV(ev.Message, key) })
	check("EachKV", func() { EachKV(ev.Message, func(k, v []byte) bool { return true }) })

	body := []byte(`{"host":"web-18","cust":"679127","source":{"ip":"102.24.37.211"},"action":"login"}`)
	path := []byte("source.ip")
	check("JSONField", func() { JSONField(body, path) })
}
