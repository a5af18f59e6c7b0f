package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// FuzzEncode runs any message, in any input format, through every rule
// set of TestEncodeGolden (rows that need escaping, the real city MMDB,
// composite keys, key=value pairs, structured data) and checks that each
// event becomes one line that is a valid JSON object, the same by the
// event's fused program as by the encoding program.
func FuzzEncode(f *testing.F) {
	for format, evs := range goldenEvents {
		for _, ev := range evs {
			f.Add([]byte(ev), uint8(format), false)
		}
	}
	f.Add([]byte("<14>1 - h a 007 m - id=1"), uint8(Syslog), false)
	f.Add([]byte("<14>May  1 10:00:00 h app[0123]: id=2"), uint8(Syslog), true)
	f.Add([]byte("{\n\"id\":\"1\"\n}"), uint8(JSON), false)
	dir := f.TempDir()
	goldenTables(f, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = set.Close() })
	var workers []*Worker
	for ci, gc := range goldenConfigs {
		p, err := New(gc.rules, gc.opts, set)
		if err != nil {
			f.Fatalf("config %d: %v", ci, err)
		}
		workers = append(workers, p.NewWorker(4))
	}
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, msg []byte, format uint8, truncated bool) {
		var flags uint8
		if truncated {
			flags = FlagTruncated
		}
		for ci, w := range workers {
			b := &Batch{Format: Format(format % 3)}
			// The message twice, so that a batch holds more than one
			// event, then alone.
			b.Add(msg, flags)
			b.Add(msg, flags)
			b.Add(msg, 0)
			out := w.process(b, nil, now)
			lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
			if len(lines) != 3 || len(out) == 0 || out[len(out)-1] != '\n' {
				t.Fatalf("config %d, format %d: %d lines for 3 events: %q", ci, format%3, len(lines), out)
			}
			for _, l := range lines {
				if !json.Valid(l) || l[0] != '{' {
					t.Fatalf("config %d, format %d: %q gave a line that is not a JSON object: %s", ci, format%3, msg, l)
				}
			}
			checkFused(t, w, 3, fmt.Sprintf("config %d, format %d, %q", ci, format%3, msg))
		}
	})
}
