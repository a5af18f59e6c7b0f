package serve

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMemcachedNoreply checks that a write with noreply is answered with
// nothing at all, as memcached answers it, so that the get after it gets
// its own answer; and that without noreply the refusal comes first.
func TestMemcachedNoreply(t *testing.T) {
	s, addr := startMC(t, MemcachedOptions{})
	get := "VALUE customers:42 0 " + strconv.Itoa(len(textValue(t, addr, "customers:42"))) + "\r\n" +
		string(textValue(t, addr, "customers:42")) + "\r\nEND\r\n"
	big := strings.Repeat("x", 100000) // more than the read buffer
	for _, w := range []struct {
		cmd     string // the write, with "%s" where noreply goes
		refused bool   // counted as a refused write
		answer  string // without noreply
	}{
		{"set customers:42 0 0 5%s\r\nhello\r\n", true, readOnly},
		{"add customers:42 0 0 5%s\r\nhello\r\n", true, readOnly},
		{"replace customers:42 0 0 5%s\r\nhello\r\n", true, readOnly},
		{"append customers:42 0 0 5%s\r\nhello\r\n", true, readOnly},
		{"prepend customers:42 0 0 5%s\r\nhello\r\n", true, readOnly},
		{"cas customers:42 0 0 5 77%s\r\nhello\r\n", true, readOnly},
		{"set customers:42 1 100 100000%s\r\n" + big + "\r\n", true, readOnly},
		{"set customers:42 0 0 0%s\r\n\r\n", true, readOnly},
		{"delete customers:42%s\r\n", true, readOnly},
		{"delete customers:42 0%s\r\n", true, readOnly},
		{"incr customers:42 1%s\r\n", true, readOnly},
		{"decr customers:42 1%s\r\n", true, readOnly},
		{"touch customers:42 10%s\r\n", true, readOnly},
		{"flush_all%s\r\n", true, readOnly},
		{"flush_all 10%s\r\n", true, readOnly},
		{"verbosity 1%s\r\n", false, "OK\r\n"},
		// Malformed: memcached's error, or nothing with noreply (the data
		// line of a malformed storage command is then read as a command,
		// as memcached reads it: that one is answered).
		{"set customers:42 0 0 x%s\r\n", false, "CLIENT_ERROR bad command line format\r\n"},
		{"set " + strings.Repeat("k", 251) + " 0 0 1%s\r\n", false, "CLIENT_ERROR bad command line format\r\n"},
		{"set customers:42 0 0 2%s\r\nhix\r\n", true, "CLIENT_ERROR bad data chunk\r\n"},
		{"incr customers:42 x%s\r\n", false, "CLIENT_ERROR invalid numeric delta argument\r\n"},
		{"touch customers:42 x%s\r\n", false, "CLIENT_ERROR invalid exptime argument\r\n"},
		{"flush_all x%s\r\n", false, "CLIENT_ERROR invalid exptime argument\r\n"},
		{"verbosity x%s\r\n", false, "CLIENT_ERROR bad command line format\r\n"},
	} {
		for _, nr := range []bool{true, false} {
			req := strings.Replace(w.cmd, "%s", map[bool]string{true: " noreply", false: ""}[nr], 1)
			want := w.answer
			if nr {
				want = ""
			}
			if strings.HasSuffix(req, "hix\r\n") {
				want += "ERROR\r\n" // "\n" after the block "hix\r" is an empty line
			}
			before := s.Stats().Refused[ProtoText]
			got := exchange(t, addr, req+"get customers:42\r\n", strings.Count(want+get, "\n"))
			if got != want+get {
				t.Errorf("%.50q:\n got %.200q\nwant %.200q", req, got, want+get)
			}
			if n := s.Stats().Refused[ProtoText] - before; w.refused && n != 1 || !w.refused && n != 0 {
				t.Errorf("%.50q: %d writes refused", req, n)
			}
		}
	}
	// Wrong token counts are "ERROR", noreply or not, as with memcached.
	for _, req := range []string{"set customers:42 0 0\r\n", "set customers:42 0 0 1 noreply x\r\n", "delete\r\n",
		"delete customers:42 0 noreply x\r\n", "incr customers:42\r\n", "touch customers:42\r\n", "flush_all 1 noreply x\r\n", "gat\r\n"} {
		if got := exchange(t, addr, req+"get customers:42\r\n", 4); got != "ERROR\r\n"+get {
			t.Errorf("%q: %q", req, got)
		}
	}
	if got := exchange(t, addr, "delete customers:42 5 noreply\r\nget customers:42\r\n", 3); got != get {
		t.Errorf("delete with a hold time and noreply: %q", got)
	}
	if got := exchange(t, addr, "delete customers:42 5\r\n", 1); got != "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n" {
		t.Errorf("delete with a hold time: %q", got)
	}
	if got := exchange(t, addr, "gat 10 customers:42\r\ngats x customers:42\r\n", 2); got != readOnly+"CLIENT_ERROR invalid exptime argument\r\n" {
		t.Errorf("gat: %q", got)
	}
}

// TestMemcachedLongGet checks that a get whose line is longer than the
// read buffer (a get_many of thousands of keys) is answered in full, as
// memcached answers it, and the connection goes on; that a long key in
// it fails the whole get; and that a get line over maxGetLine, or
// another command's line over the read buffer, ends the connection.
func TestMemcachedLongGet(t *testing.T) {
	_, addr := startMC(t, MemcachedOptions{})
	v7 := string(textValue(t, addr, "customers:7"))
	const n = 10000
	keys := make([]string, n)
	vals := map[string]string{}
	var want strings.Builder
	for i := range keys {
		keys[i] = "customers:" + strconv.Itoa(i%1000)
		if i%1000 == 999 {
			keys[i] = "customers:nope" // a miss among them
			continue
		}
		v, ok := vals[keys[i]]
		if !ok {
			v = string(textValue(t, addr, keys[i]))
			vals[keys[i]] = v
		}
		want.WriteString("VALUE " + keys[i] + " 0 " + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
	}
	want.WriteString("END\r\n")
	line := "get " + strings.Join(keys, " ")
	if len(line) <= mcReadBuf || len(line) > maxGetLine {
		t.Fatalf("line of %d bytes", len(line))
	}
	get7 := "VALUE customers:7 0 " + strconv.Itoa(len(v7)) + "\r\n" + v7 + "\r\nEND\r\n"
	got := exchange(t, addr, line+"\r\nget customers:7\r\n", strings.Count(want.String()+get7, "\n"))
	if got != want.String()+get7 {
		t.Errorf("long get: %d bytes, want %d; starts %.200q", len(got), len(want.String()+get7), got)
	}
	bad := line + " " + strings.Repeat("k", 251) + "\r\nget customers:7\r\n"
	if got := exchange(t, addr, bad, 4); got != "CLIENT_ERROR bad command line format\r\n"+get7 {
		t.Errorf("long get with a long key: %.200q", got)
	}
	for _, req := range []string{
		"get " + strings.Repeat("customers:1 ", maxGetLine/12+1) + "\r\nget customers:7\r\n",
		"delete " + strings.Repeat("x", mcReadBuf) + "\r\nget customers:7\r\n",
	} {
		c, r := dialMC(t, addr)
		go func() { _, _ = c.Write([]byte(req)) }()
		got, err := io.ReadAll(r)
		if string(got) != "CLIENT_ERROR line too long\r\n" || err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%.20q of %d bytes: %q, %v", req, len(req), got, err)
		}
	}
}
