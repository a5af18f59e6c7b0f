package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffRangeAndTimeTables: lut diff names the rows of range and
// time-bounded tables by their identity ([from, to], the key and its
// validity, or both) and lists those added, removed and changed; bounds
// written otherwise (05 for 5, epoch seconds for RFC 3339) are the same
// identity; rows that share an identity are paired in source order; a
// table compared with itself has no difference (--exit-code 0).
func TestDiffRangeAndTimeTables(t *testing.T) {
	dir := t.TempDir()
	compile := func(name, csv string, flags ...string) string {
		src := writeTemp(t, dir, name+".csv", csv)
		out := filepath.Join(dir, name+".lut")
		mustRun(t, append(append([]string{"compile"}, flags...), "--out", out, src)...)
		return out
	}
	rangeFlags := []string{"--match", "range", "--range-columns", "from,to", "--overlap", "first"}
	oldPorts := compile("ports-old", "from,to,service\n0,1023,system\n443,443,https\n443,443,tls\n8000,8080,alt\n", rangeFlags...)
	newPorts := compile("ports-new", "from,to,service\n0,1023,system\n0443,443,https\n443,443,quic\n1024,49151,registered\n", rangeFlags...)
	for _, c := range []struct {
		old, new string
		want     []string
	}{
		{oldPorts, newPorts, []string{
			"1 added, 1 removed, 2 changed (4 rows -> 4 rows)",
			"+ [1024, 49151]",
			"- [8000, 8080]",
			`~ [443, 443]: from: "443" -> "0443"`,
			`~ [443, 443]: service: "tls" -> "quic"`,
		}},
	} {
		out, _, code := run(t, "diff", "--limit", "5", "--exit-code", c.old, c.new)
		if code != 1 || strings.TrimSpace(out) != strings.Join(c.want, "\n") {
			t.Errorf("diff of range tables: exit %d\n%s\nwant\n%s", code, out, strings.Join(c.want, "\n"))
		}
	}

	leaseFlags := []string{"--key", "ip", "--valid-from", "start", "--valid-to", "end"}
	oldLeases := compile("leases-old", "ip,start,end,user\n"+
		"10.1.2.3,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,ann\n"+
		"10.1.2.3,2026-03-01T12:00:00Z,,bob\n"+
		"10.1.2.4,,1772366400,carl\n", leaseFlags...)
	newLeases := compile("leases-new", "ip,start,end,user\n"+
		"10.1.2.3,2026-03-01T08:00:00Z,1772366400,ann\n"+ // the same validity, in epoch seconds
		"10.1.2.3,2026-03-01T12:00:00Z,2026-03-01T18:00:00Z,bob\n"+ // bob's lease now ends
		"10.1.2.4,,1772366400,dora\n", leaseFlags...)
	out, _, code := run(t, "diff", "--limit", "5", "--exit-code", oldLeases, newLeases)
	want := strings.Join([]string{
		"1 added, 1 removed, 2 changed (3 rows -> 3 rows)",
		`+ "10.1.2.3" valid [2026-03-01T12:00:00Z, 2026-03-01T18:00:00Z)`,
		`- "10.1.2.3" valid [2026-03-01T12:00:00Z, open)`,
		`~ "10.1.2.3" valid [2026-03-01T08:00:00Z, 2026-03-01T12:00:00Z): end: "2026-03-01T12:00:00Z" -> "1772366400"`,
		`~ "10.1.2.4" valid [open, 2026-03-01T12:00:00Z): user: "carl" -> "dora"`,
	}, "\n")
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("diff of lease tables: exit %d\n%s\nwant\n%s", code, out, want)
	}

	rtFlags := []string{"--match", "range", "--range-columns", "from,to", "--valid-from", "start", "--valid-to", "end"}
	oldNAT := compile("nat-old", "from,to,start,end,sub\n1024,2047,,2026-03-01T12:00:00Z,sub-17\n1024,2047,2026-03-01T12:00:00Z,,sub-42\n", rtFlags...)
	newNAT := compile("nat-new", "from,to,start,end,sub\n1024,2047,,2026-03-01T12:00:00Z,sub-17\n1024,2047,2026-03-01T12:00:00Z,,sub-43\n2048,3071,,,sub-99\n", rtFlags...)
	out, _, code = run(t, "diff", "--limit", "5", "--exit-code", oldNAT, newNAT)
	want = strings.Join([]string{
		"1 added, 0 removed, 1 changed (2 rows -> 3 rows)",
		"+ [2048, 3071] valid [open, open)",
		`~ [1024, 2047] valid [2026-03-01T12:00:00Z, open): sub: "sub-42" -> "sub-43"`,
	}, "\n")
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("diff of range tables bounded in time: exit %d\n%s\nwant\n%s", code, out, want)
	}

	for _, tbl := range []string{oldPorts, oldLeases, oldNAT} {
		if out, _, code := run(t, "diff", "--exit-code", tbl, tbl); code != 0 || !strings.HasPrefix(out, "0 added, 0 removed, 0 changed") {
			t.Errorf("diff of %s with itself: exit %d\n%s", tbl, code, out)
		}
	}
	// A range table against a range table bounded in time: every row is
	// another identity, and the key is the same.
	out, _, _ = run(t, "diff", "--limit", "1", oldPorts, oldNAT)
	if !strings.Contains(out, "4 removed") || !strings.Contains(out, "2 added") {
		t.Errorf("diff of a range table and one bounded in time:\n%s", out)
	}
}
