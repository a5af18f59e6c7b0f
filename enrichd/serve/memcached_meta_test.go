package serve

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
)

// exchange writes req in one write and reads n lines (a VA line and its
// data block count as two).
func exchange(t *testing.T, addr, req string, n int) string {
	t.Helper()
	c, r := dialMC(t, addr)
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for range n {
		l, err := r.ReadString('\n')
		b.WriteString(l)
		if err != nil {
			t.Fatalf("after %q: %v", b.String(), err)
		}
	}
	return b.String()
}

func TestMemcachedMeta(t *testing.T) {
	s, addr := startMC(t, MemcachedOptions{})
	v := string(textValue(t, addr, "customers:42"))
	size := strconv.Itoa(len(v))
	pair := string(textValue(t, addr, "pairs:eu,1"))
	snap := s.set.Acquire()
	gen := strconv.FormatUint(snap.Generation(), 10)
	snap.Release()
	b64 := base64.StdEncoding.EncodeToString([]byte("customers:42"))
	for _, tc := range []struct{ req, want string }{
		{"mg customers:42 v", "VA " + size + "\r\n" + v + "\r\n"},
		{"mg customers:42 s v f", "VA " + size + " s" + size + " f0\r\n" + v + "\r\n"},
		{"mg customers:42 k c t O123 q", "HD kcustomers:42 c" + gen + " t-1 O123\r\n"},
		{"mg customers:42", "HD\r\n"},
		{"mg customers:42 u R30 P1 Lx", "HD\r\n"},
		{"mg customers:nope v k O9", "EN kcustomers:nope O9\r\n"},
		{"mg customers:nope v q\r\nmn", "MN\r\n"},
		{"mg " + b64 + " b k v", "VA " + size + " kcustomers:42\r\n" + v + "\r\n"},
		{"mg Y3VzdG9tZXJzOm5vcGU= b k", "EN kY3VzdG9tZXJzOm5vcGU= b\r\n"},
		{"mg pairs:eu,1 v", "VA " + strconv.Itoa(len(pair)) + "\r\n" + pair + "\r\n"},
		{"mn", "MN\r\n"},
		// Errors, in memcached's words.
		{"mg", "ERROR\r\n"},
		{"mg " + strings.Repeat("k", 251) + " v", "CLIENT_ERROR bad command line format\r\n"},
		{"mg customers:42 v v", "CLIENT_ERROR duplicate flag\r\n"},
		{"mg customers:42 z", "CLIENT_ERROR invalid flag\r\n"},
		{"mg customers:42 h", "CLIENT_ERROR invalid flag\r\n"},
		{"mg customers:42 l", "CLIENT_ERROR invalid flag\r\n"},
		{"mg customers:42 O" + strings.Repeat("x", 32), "CLIENT_ERROR opaque token too long\r\n"},
		{"mg !!! b", "CLIENT_ERROR error decoding key\r\n"},
		{"mg customers:42 Tx", "CLIENT_ERROR bad token in command line format\r\n"},
		{"mg customers:42 Fx", "CLIENT_ERROR bad command line format\r\n"},
		{"mg customers:42 " + strings.Repeat("a ", 17) + "v", "CLIENT_ERROR options flags are too long\r\n"},
		{"mg customers:nope q O" + strings.Repeat("x", 40), "CLIENT_ERROR opaque token too long\r\n"},
		// Writes.
		{"mg customers:42 v T30", "SERVER_ERROR read-only\r\n"},
		{"mg customers:nope v N30", "SERVER_ERROR read-only\r\n"},
		{"ms customers:42 2 T0 q\r\nhi", "SERVER_ERROR read-only\r\n"},
		// "hix\r" is the block and its end; "\n" is then an empty line.
		{"ms customers:42 2\r\nhix", "CLIENT_ERROR bad data chunk\r\nERROR\r\n"},
		{"ms customers:42", "CLIENT_ERROR bad command line format\r\n"},
		{"ms customers:42 x", "CLIENT_ERROR bad command line format\r\n"},
		{"md customers:42 q", "SERVER_ERROR read-only\r\n"},
		{"ma customers:42", "SERVER_ERROR read-only\r\n"},
		{"me customers:42", "ERROR\r\n"},
		{"mz customers:42", "ERROR\r\n"},
	} {
		// A version after every request checks that the connection is in
		// step.
		lines := strings.Count(tc.want, "\n") + 1
		got := exchange(t, addr, tc.req+"\r\nversion\r\n", lines)
		if want := tc.want + "VERSION " + MemcachedVersion + "\r\n"; got != want {
			t.Errorf("%.60q:\n got %q\nwant %q", tc.req, got, want)
		}
	}
	st := s.Stats()
	if st.Requests[ProtoMeta] < 30 || st.Refused[ProtoMeta] != 6 {
		t.Errorf("stats %+v", st)
	}
}
