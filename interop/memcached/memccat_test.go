package memcached

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMemccat is the memccat row: libmemcached's memccat (libmemcached-
// tools), over the text and the binary protocol, prints from enrichd
// exactly what it prints from a real memcached holding the same items,
// misses and exit status included.
func TestMemccat(t *testing.T) {
	memccat := need(t, "memccat", "libmemcached-tools")
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	mirror(t, ours, real, "customers:42", "customers:7", "customers:9000")
	v42, _ := value(t, ours, "customers:42")
	v7, _ := value(t, ours, "customers:7")
	v9000, _ := value(t, ours, "customers:9000")
	run := func(addr string, args ...string) (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, memccat, append([]string{"--servers=" + addr}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), strings.ReplaceAll(stderr.String(), addr, "ADDR"), code
	}
	for _, tc := range []struct {
		args []string
		want string // stdout
		code int
	}{
		{[]string{"customers:42", "customers:7", "customers:9000"}, string(v42) + "\n" + string(v7) + "\n" + string(v9000) + "\n", 0},
		{[]string{"--binary", "customers:42", "customers:7", "customers:9000"}, string(v42) + "\n" + string(v7) + "\n" + string(v9000) + "\n", 0},
		{[]string{"--flags", "customers:42"}, "0\n" + string(v42) + "\n", 0},
		{[]string{"--binary", "--flags", "customers:42"}, "0\n" + string(v42) + "\n", 0},
		{[]string{"--verbose", "customers:7"}, "key: customers:7\nvalue: " + string(v7) + "\n", 0},
		{[]string{"customers:42", "customers:nope", "customers:7"}, string(v42) + "\n" + string(v7) + "\n", 1},
		{[]string{"--binary", "customers:nope", "customers:42"}, string(v42) + "\n", 1},
	} {
		oout, oerr, ocode := run(ours, tc.args...)
		rout, rerr, rcode := run(real, tc.args...)
		if oout != tc.want || ocode != tc.code {
			t.Errorf("memccat %v against enrichd: exit %d\n%.300q\nwant exit %d\n%.300q", tc.args, ocode, oout, tc.code, tc.want)
		}
		if oout != rout || oerr != rerr || ocode != rcode {
			t.Errorf("memccat %v: enrichd and memcached differ:\nenrichd   exit %d %.200q %q\nmemcached exit %d %.200q %q",
				tc.args, ocode, oout, oerr, rcode, rout, rerr)
		}
	}
}
