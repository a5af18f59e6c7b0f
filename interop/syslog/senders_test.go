package syslog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// senderRecord is a sender's own parse of an event, as its JSON template
// writes it (see rsyslogParseTemplate and syslogngParseTemplate).
type senderRecord struct {
	Host     string `json:"host"`
	App      string `json:"app"`
	Tag      string `json:"tag"`
	ProcID   string `json:"procid"`
	MsgID    string `json:"msgid"`
	Time     string `json:"time"`
	Facility string `json:"facility"`
	Severity string `json:"severity"`
	Msg      string `json:"msg"`
	Raw      string `json:"raw"`
	Version  string `json:"version"` // rsyslog: 0 for RFC 3164, 1 for RFC 5424
}

// readParses reads a sender's parse file, one event per line. nilValue is
// how the program writes an absent field ("-" for rsyslog; syslog-ng
// leaves it out).
func readParses(t testing.TB, path, nilValue string) []parsed {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []parsed
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r senderRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v: %q", path, n, err, sc.Text())
		}
		nilv := func(s string) string {
			if s == nilValue {
				return ""
			}
			return s
		}
		p := parsed{host: nilv(r.Host), app: nilv(r.App), procid: nilv(r.ProcID), msgid: nilv(r.MsgID), msg: r.Msg, tag: r.Tag, raw: r.Raw, version: r.Version}
		if p.time, err = time.Parse(time.RFC3339Nano, r.Time); err != nil {
			t.Fatalf("%s:%d: time: %v", path, n, err)
		}
		if p.fac, err = strconv.Atoi(r.Facility); err != nil {
			t.Fatalf("%s:%d: facility: %v", path, n, err)
		}
		if p.sev, err = strconv.Atoi(r.Severity); err != nil {
			t.Fatalf("%s:%d: severity: %v", path, n, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readSender reads a sender's parse file into events by sequence number.
func readSender(t testing.TB, path, nilValue string) map[string]parsed {
	t.Helper()
	out := map[string]parsed{}
	for i, p := range readParses(t, path, nilValue) {
		seq := p.seq()
		if _, dup := out[seq]; dup || seq == "" {
			t.Fatalf("%s:%d: sequence number %q missing or seen twice: %q", path, i+1, seq, p.msg)
		}
		out[seq] = p
	}
	return out
}

// sendOctetCounted sends every event to addr over one TCP connection,
// framed by RFC 6587 octet counting.
func sendOctetCounted(t testing.TB, addr string, evs []input) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(c, 64<<10)
	for _, ev := range evs {
		fmt.Fprintf(w, "%d ", len(ev.wire))
		w.Write(ev.wire)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkSenderParsedAll checks that the sender parsed every event sent
// once (its own parse is the reference, so it must be complete).
func checkSenderParsedAll(t *testing.T, name string, evs []input, got map[string]parsed) {
	t.Helper()
	if len(got) != len(evs) {
		var missing []string
		for _, ev := range evs {
			if _, ok := got[ev.seq]; !ok {
				missing = append(missing, ev.seq)
			}
		}
		t.Fatalf("%s parsed %d of %d events; missing: %.10q", name, len(got), len(evs), missing)
	}
	for _, ev := range evs {
		if !strings.Contains(got[ev.seq].msg, "seq="+ev.seq) {
			t.Fatalf("%s: event %s: %q", name, ev.seq, got[ev.seq].msg)
		}
	}
}
