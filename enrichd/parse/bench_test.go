package parse

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"
)

func loadLines(b *testing.B, name string) [][]byte {
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
}

func benchParse(b *testing.B, file string) {
	lines := loadLines(b, file)
	var ev Event
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = ParseSyslog(lines[i%len(lines)], &ev)
	}
}

// forms3164 are RFC 3164 headers as rsyslog's and syslog-ng's forwarding
// formats write them: TAGs with and without ':' and [pid], cut at 32 bytes,
// RFC 3339 and fractional timestamps, a host-less TAG.
var forms3164 = []string{
	"<165>Dec  1 14:20:02 db-2 billing-api cust=679127 src=102.24.37.211 action=login",
	"<165>Dec  1 14:20:02 db-2 billing-api[42] cust=679127 src=102.24.37.211 action=login",
	"<165>2026-12-01T14:20:02.123456+01:00 db-2.example.com billing-api cust=679127 src=102.24.37.211 action=login",
	"<165>Dec  1 14:20:02 10.1.2.3 com.example.billing.reconciliati cust=679127 src=102.24.37.211 action=login",
	"<165>Dec  1 14:20:02.123456 web-18 postfix/smtpd[24065]: cust=679127 src=102.24.37.211 action=login",
	"<165>Dec  1 14:20:02 fe80::1 sshd[77]: cust=679127 src=102.24.37.211 action=login",
	"<165>Dec  1 14:20:02 cron: cust=679127 src=102.24.37.211 action=login",
}

func BenchmarkParseSyslog5424(b *testing.B) { benchParse(b, "testdata/gen-events-rfc5424.txt") }
func BenchmarkParseSyslog3164(b *testing.B) { benchParse(b, "testdata/gen-events-rfc3164.txt") }

func BenchmarkParseSyslog3164Forms(b *testing.B) {
	lines := make([][]byte, len(forms3164))
	for i, s := range forms3164 {
		lines[i] = []byte(s)
	}
	var ev Event
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = ParseSyslog(lines[i%len(lines)], &ev)
	}
}

// BenchmarkParseExtract is the per-event hot path: header parse plus the
// two lookup keys.
func BenchmarkParseExtract(b *testing.B) {
	for _, file := range []string{"testdata/gen-events-rfc5424.txt", "testdata/gen-events-rfc3164.txt"} {
		b.Run(file[len("testdata/gen-events-"):len(file)-4], func(b *testing.B) {
			lines := loadLines(b, file)
			var ev Event
			x := NewExtractor([]string{"cust", "src"})
			vals := make([][]byte, 2)
			b.SetBytes(int64(len(lines[0])))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_ = ParseSyslog(lines[i%len(lines)], &ev)
				x.Extract(ev.Message, vals)
			}
		})
	}
}

func BenchmarkExtract(b *testing.B) {
	msg := []byte("cust=679127 src=102.24.37.211 action=login")
	x := NewExtractor([]string{"cust", "src"})
	vals := make([][]byte, 2)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		x.Extract(msg, vals)
	}
}

func BenchmarkJSONField(b *testing.B) {
	lines := loadLines(b, "testdata/gen-events-json.txt")
	path := []byte("src")
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		JSONField(lines[i%len(lines)], path)
	}
}

func BenchmarkFramer(b *testing.B) {
	lines := loadLines(b, "testdata/gen-events-rfc5424.txt")
	var nl, oc []byte
	for _, l := range lines {
		nl = append(append(nl, l...), '\n')
		oc = append(fmt.Appendf(oc, "%d ", len(l)), l...)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"newline", nl}, {"octet", oc}} {
		b.Run(tc.name, func(b *testing.B) {
			fr := NewFramer(&loopReader{data: tc.data}, 64<<10)
			b.SetBytes(int64(len(tc.data) / len(lines)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := fr.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendTimestampRFC3339(b *testing.B) {
	var ev Event
	_ = ParseSyslog([]byte(sample5424), &ev)
	dst := make([]byte, 0, 64)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendTimestampRFC3339(dst[:0], &ev, now)
	}
}
