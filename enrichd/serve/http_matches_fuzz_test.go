package serve

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzQueryMaxMatches fuzzes the reading of a request's max_matches: it
// never panics, gives 1 to MaxMatchesLimit or a message, and reads the
// value net/url reads (its first max_matches, unescaped) from every query
// net/url accepts whose keys need no unescaping.
func FuzzQueryMaxMatches(f *testing.F) {
	for _, s := range []string{"", "max_matches=3", "sep=/&max_matches=10", "max_matches=0", "max_matches=1001",
		"max_matches=%33", "max_matches=+3", "max_matches=3&max_matches=4", "max_matches", "max_matches=&x=1", "xmax_matches=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		n, msg := queryMaxMatches(q)
		if (msg == "") != (n >= 1 && n <= MaxMatchesLimit) {
			t.Fatalf("%q: %d, %q", q, n, msg)
		}
		vals, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		for _, kv := range strings.Split(q, "&") {
			if k, _, _ := strings.Cut(kv, "="); strings.ContainsAny(k, "%+") {
				return // a key net/url unescapes
			}
		}
		v, ok := vals["max_matches"]
		want := 1
		if ok && v[0] != "" {
			w, err := strconv.Atoi(v[0])
			if err != nil || w < 1 || w > MaxMatchesLimit {
				if msg == "" {
					t.Fatalf("%q: max_matches %d, net/url reads %q", q, n, v[0])
				}
				return
			}
			want = w
		}
		if msg != "" || n != want {
			t.Fatalf("%q: max_matches %d %q, net/url reads %q", q, n, msg, v)
		}
	})
}

var strictRFC3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`)

// FuzzQueryAt fuzzes the reading of a request's at: it never panics;
// epoch seconds are what strconv reads; an RFC 3339 time that the time
// package parses (years 1678 to 2261) is read as the same second.
func FuzzQueryAt(f *testing.F) {
	for _, s := range []string{"at=250", "at=-5", "at=2026-03-01T12:00:00Z", "at=2026-03-01T13:00:00.5%2B01:00",
		"max_matches=2&at=1970-01-01T00:00:00Z", "at=yesterday", "at=", "at=99999999999999999999", "at=+7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		at, timed, msg := queryAt(q)
		v := queryParam(q, "at")
		if v == "" {
			if timed || msg != "" {
				t.Fatalf("%q: no at, read %d %v %q", q, at, timed, msg)
			}
			return
		}
		if timed == (msg != "") {
			t.Fatalf("%q: timed %v and message %q", q, timed, msg)
		}
		if strings.ContainsAny(v, "%+") {
			return // unescaped first
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if !timed || at != n {
				t.Fatalf("%q: %d %v, strconv reads %d", q, at, timed, n)
			}
			return
		}
		// The time package also takes one-digit hours; RFC 3339 does not.
		if tm, err := time.Parse(time.RFC3339Nano, v); err == nil && strictRFC3339.MatchString(v) && tm.Year() >= 1678 && tm.Year() <= 2261 {
			if !timed || at != tm.Unix() {
				t.Fatalf("%q: %d %v %q, the time package reads %d", q, at, timed, msg, tm.Unix())
			}
		}
	})
}

// FuzzQuerySep fuzzes the reading of a request's sep: it never panics,
// gives a separator that is never empty, and reads the value net/url reads
// (its first sep, unescaped; "," when that is empty) from every query
// net/url accepts whose keys need no unescaping.
func FuzzQuerySep(f *testing.F) {
	for _, s := range []string{"", "sep=%7C", "sep=|", "sep=&sep=/", "sep&sep=/", "sep=%2&sep=/", "max_matches=2&sep=%2C",
		"sep=a+b", "xsep=/", "sep==", "sep=%E2%80%94"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		sep := querySep(q)
		if sep == "" {
			t.Fatalf("%q: empty separator", q)
		}
		vals, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		for _, kv := range strings.Split(q, "&") {
			if k, _, _ := strings.Cut(kv, "="); strings.ContainsAny(k, "%+") {
				return // a key net/url unescapes
			}
		}
		want := ","
		if v, ok := vals["sep"]; ok && v[0] != "" {
			want = v[0]
		}
		if sep != want {
			t.Fatalf("%q: sep %q, net/url reads %q", q, sep, vals["sep"])
		}
	})
}
