package syslog

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// enrichd is a running enrichd writing its JSON lines to out.
type enrichd struct {
	*proc
	out      string
	httpAddr string
}

// startEnrichd starts the built enrichd with syslog inputs (args such as
// "--tcp", addr) writing to a file, and waits until its /readyz answers
// 200. It also writes event.original, the bytes it received, which
// failure messages show.
func startEnrichd(t testing.TB, name string, args ...string) *enrichd {
	t.Helper()
	return startEnrichdConfig(t, name, "pipeline: {original: true}\n", append([]string{"--format", "syslog"}, args...)...)
}

// startEnrichdConfig is startEnrichd with the configuration file yml.
func startEnrichdConfig(t testing.TB, name, yml string, args ...string) *enrichd {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "enrichd.yaml")
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	httpAddr := "127.0.0.1:" + freePort(t)
	cmd := append([]string{enrichdBin, "--config", conf, "--out", out, "--http", httpAddr}, args...)
	p := start(t, name, cmd, nil)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("%s exited before it was ready: %v\n%s", name, p.err, p.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 60 s\n%s", name, p.output())
		}
		if r, err := http.Get("http://" + httpAddr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return &enrichd{p, out, httpAddr}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outRecord is the part of enrichd's output line the tests compare.
type outRecord struct {
	Timestamp string `json:"@timestamp"`
	Host      struct {
		Name *string `json:"name"`
	} `json:"host"`
	Log struct {
		Syslog struct {
			Facility struct{ Code *int } `json:"facility"`
			Severity struct{ Code *int } `json:"severity"`
			AppName  *string             `json:"appname"`
			MsgID    *string             `json:"msgid"`
			ProcID   *string             `json:"procid"`
		} `json:"syslog"`
	} `json:"log"`
	Process struct {
		PID *json.Number `json:"pid"`
	} `json:"process"`
	Message *string  `json:"message"`
	Tags    []string `json:"tags"`
	Event   struct {
		Original string `json:"original"`
	} `json:"event"`
}

// records reads enrichd's output file: one parsed event per line, in
// order.
func readEnrichd(t testing.TB, path string) []parsed {
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
		var r outRecord
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s:%d: %v: %q", path, n, err, sc.Text())
		}
		p := parsed{raw: r.Event.Original, fac: -1, sev: -1}
		ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil {
			t.Fatalf("%s:%d: @timestamp: %v", path, n, err)
		}
		p.time = ts
		str := func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		}
		p.host, p.app, p.msgid, p.msg = str(r.Host.Name), str(r.Log.Syslog.AppName), str(r.Log.Syslog.MsgID), str(r.Message)
		p.procid = str(r.Log.Syslog.ProcID)
		if r.Process.PID != nil {
			p.procid = r.Process.PID.String()
		}
		if c := r.Log.Syslog.Facility.Code; c != nil {
			p.fac = *c
		}
		if c := r.Log.Syslog.Severity.Code; c != nil {
			p.sev = *c
		}
		p.tags = r.Tags
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
