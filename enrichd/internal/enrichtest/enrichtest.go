// Package enrichtest holds what the tests of the daemon and of the engine
// share: test events, and reading the enriched lines back.
package enrichtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Event returns an RFC 5424 line of event i, with customer cust and
// source address src.
func Event(i, cust int, src string) string {
	return fmt.Sprintf("<134>1 2026-11-30T05:24:00.000Z web-%02d app %d login - seq=%d cust=%d src=%s action=login", i%20, 1000+i%5000, i, cust, src)
}

// Decode parses an output line, failing the test on invalid JSON.
func Decode(t testing.TB, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("invalid JSON output %q: %v", line, err)
	}
	return m
}

// Get returns the member at a dotted path of a decoded line, or nil.
func Get(m map[string]any, path string) any {
	var v any = m
	for _, seg := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[seg]
	}
	return v
}
