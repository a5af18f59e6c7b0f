package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLogFlags: --log-format and --log-level set the logs, which write
// durations as float seconds.
func TestLogFlags(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	writeFile(t, in, "<13>1 2026-11-30T06:16:21Z h app - - - a=1\n")
	args := []string{"--file", in, "--format", "syslog", "--out", filepath.Join(dir, "out.json")}
	var out, errb bytes.Buffer
	if code := run(append(args, "--log-format", "text"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !regexp.MustCompile(`level=INFO msg="enrichd ready" startup_seconds=0\.\d+ `).MatchString(errb.String()) ||
		!regexp.MustCompile(`msg="shut down" took_seconds=\d+\.?\d*(e-\d+)? `).MatchString(errb.String()) {
		t.Fatalf("text logs:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), `level=WARN msg="no rules: events are written as they were received`) {
		t.Fatalf("no warning for a daemon without rules:\n%s", errb.String())
	}
	errb.Reset()
	if code := run(args, &out, &errb); code != 0 || !regexp.MustCompile(`"msg":"enrichd ready","startup_seconds":\d`).MatchString(errb.String()) {
		t.Fatalf("json logs: exit %d:\n%s", code, errb.String())
	}
	errb.Reset()
	if code := run(append(args, "--log-level", "warn"), &out, &errb); code != 0 || strings.Contains(errb.String(), "ready") {
		t.Fatalf("--log-level warn: exit %d:\n%s", code, errb.String())
	}
	errb.Reset()
	if code := run(append(args, "--log-level", "loud", "--check-config"), &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `--log-level: must be one of debug, info, warn, error, not "loud"`) {
		t.Fatalf("bad level: exit %d: %s", code, errb.String())
	}
}
