package main

import (
	"strings"
	"testing"
)

// TestFlagValuesRefused: flag values out of their range are refused as
// usage errors (exit 2) before any work, where they were taken as
// something else (--progress bogus as auto, -j -3 as one job per CPU,
// --delta-chain -1 as the default).
func TestFlagValuesRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compile", "--progress", "bogus", "--key", "id", "--out", "x.lut", "x.csv"}, `invalid argument "bogus" for "--progress" flag: must be auto, always or never, not "bogus"`},
		{[]string{"verify", "--progress", "sometimes", "x.lut"}, `invalid argument "sometimes" for "--progress" flag`},
		{[]string{"publish", "--progress", "yes", "dist", "s3://b/p"}, `invalid argument "yes" for "--progress" flag`},
		{[]string{"build", "--progress", "no", "tables.yaml", "--out", "dist"}, `invalid argument "no" for "--progress" flag`},
		{[]string{"build", "-j", "-3", "tables.yaml", "--out", "dist"}, "build: --jobs must be 1 or more (0: one per CPU), not -3"},
		{[]string{"build", "--delta-chain", "-1", "tables.yaml", "--out", "dist"}, "build: --delta-chain must be 1 or more (0: the default, 8), not -1"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("lut %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
