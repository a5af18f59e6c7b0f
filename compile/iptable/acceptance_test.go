package iptable

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"

	"github.com/lutkit/lutkit/internal/testfiles"
)

var asnColumns = []string{"ip_range_start", "ip_range_end", "autonomous_system_number", "autonomous_system_organization"}

type asnRow struct {
	start, end netip.Addr
	asn        uint64
	org        string
}

func readASNRows(t testing.TB, limit int) []asnRow {
	f, err := os.Open(testfiles.Fetched(t, "asn-ipv4.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	var rows []asnRow
	for limit <= 0 || len(rows) < limit {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		asn, _ := strconv.ParseUint(rec[2], 10, 32)
		rows = append(rows, asnRow{netip.MustParseAddr(rec[0]), netip.MustParseAddr(rec[1]), asn, rec[3]})
	}
	return rows
}

// middle returns the address halfway between a and b.
func middle(a, b netip.Addr) netip.Addr {
	x := new(big.Int).SetBytes(a.AsSlice())
	y := new(big.Int).SetBytes(b.AsSlice())
	x.Add(x, y).Rsh(x, 1)
	buf := make([]byte, len(a.AsSlice()))
	x.FillBytes(buf)
	m, _ := netip.AddrFromSlice(buf)
	return m
}

type probe struct {
	ip  netip.Addr
	row int // -1: expected not found
}

// asnProbes returns first, middle and last address of every range, with
// the row whose value the address must carry, plus addresses in no range.
//
// A few source rows overlap. There the compiler's rule decides: each range
// becomes its minimal CIDR set, the most specific network wins, and for
// equal networks the later row.
func asnProbes(rows []asnRow) []probe {
	cluster := make([]int, len(rows)) // first row of the overlap cluster
	var maxEnd netip.Addr
	for i, r := range rows {
		cluster[i] = i
		if i > 0 && !maxEnd.Less(r.start) {
			cluster[i] = cluster[i-1]
		}
		if i == 0 || maxEnd.Less(r.end) {
			maxEnd = r.end
		}
	}
	clusterEnd := map[int]int{}
	for i, c := range cluster {
		clusterEnd[c] = i
	}
	winner := func(ip netip.Addr, row int) int {
		c := cluster[row]
		if clusterEnd[c] == c {
			return row
		}
		best, bestBits := -1, -1
		for j := c; j <= clusterEnd[c]; j++ {
			r := rows[j]
			if ip.Less(r.start) || r.end.Less(ip) {
				continue
			}
			for _, p := range netipx.IPRangeFrom(r.start, r.end).Prefixes() {
				if p.Contains(ip) && p.Bits() >= bestBits {
					best, bestBits = j, p.Bits()
				}
			}
		}
		return best
	}
	var ps []probe
	for i, r := range rows {
		for _, ip := range []netip.Addr{r.start, middle(r.start, r.end), r.end} {
			ps = append(ps, probe{ip, winner(ip, i)})
		}
	}
	// Gaps: the address after the furthest end so far, when the next
	// range starts later.
	maxEnd = netip.Addr{}
	for i := 0; i+1 < len(rows); i++ {
		if !maxEnd.IsValid() || maxEnd.Less(rows[i].end) {
			maxEnd = rows[i].end
		}
		n := maxEnd.Next()
		if n.IsValid() && n.Less(rows[i+1].start) {
			ps = append(ps, probe{n, -1})
		}
	}
	return ps
}

// requireTool finds a tool; absent, the test is skipped unless CI is set.
func requireTool(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not installed (CI): add its Debian package to .ci/apt-packages", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

func TestASNIndependentReaders(t *testing.T) {
	limit := 0
	if raceEnabled || testing.Short() {
		limit = 40000 // the race detector makes the full build too slow
	}
	rows := readASNRows(t, limit)
	src := testfiles.Fetched(t, "asn-ipv4.csv")
	dir := t.TempDir()
	if limit > 0 {
		src = filepath.Join(dir, "asn.csv")
		var b strings.Builder
		w := csv.NewWriter(&b)
		for _, r := range rows {
			if err := w.Write([]string{r.start.String(), r.end.String(), strconv.FormatUint(r.asn, 10), r.org}); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "asn.mmdb")
	st, err := Compile(out, Options{Profile: ProfileASN, DatabaseType: "GeoLite2-ASN", BuildEpoch: 1700000000}, []Source{{
		Kind: CSVRanges, Path: src, Columns: asnColumns,
		StartColumn: "ip_range_start", EndColumn: "ip_range_end",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sources[0].Rows != len(rows) {
		t.Fatalf("read %d rows, want %d", st.Sources[0].Rows, len(rows))
	}
	probes := asnProbes(rows)
	t.Logf("%d ranges, %d probes, %d nodes, %d bytes", len(rows), len(probes), st.Nodes, st.Size)

	t.Run("maxminddb-golang", func(t *testing.T) {
		db, err := maxminddb.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var rec struct {
			ASN uint32 `maxminddb:"autonomous_system_number"`
			Org string `maxminddb:"autonomous_system_organization"`
		}
		for _, p := range probes {
			res := db.Lookup(p.ip)
			if p.row < 0 {
				if res.Found() {
					t.Fatalf("%s: found, want not found", p.ip)
				}
				continue
			}
			rec.ASN, rec.Org = 0, ""
			if err := res.Decode(&rec); err != nil || !res.Found() {
				t.Fatalf("%s: found=%v err=%v", p.ip, res.Found(), err)
			}
			want := rows[p.row]
			if uint64(rec.ASN) != want.asn || rec.Org != want.org {
				t.Fatalf("%s: got %d %q, want %d %q", p.ip, rec.ASN, rec.Org, want.asn, want.org)
			}
			// The IPv4-mapped form reaches the same record through the alias.
			if m := db.Lookup(netip.AddrFrom16(p.ip.As16())); m.Offset() != res.Offset() {
				t.Fatalf("%s: IPv4-mapped lookup differs", p.ip)
			}
		}
	})

	t.Run("python3-maxminddb", func(t *testing.T) {
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			py = requireTool(t, "python3")
		}
		if err := exec.Command(py, "-c", "import maxminddb").Run(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("python3-maxminddb not installed (CI)")
			}
			t.Skip("python3 maxminddb module not installed")
		}
		in := filepath.Join(dir, "ips.txt")
		var b strings.Builder
		for _, p := range probes {
			b.WriteString(p.ip.String())
			b.WriteByte('\n')
		}
		if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `import sys, json, maxminddb
r = maxminddb.open_database(sys.argv[1], maxminddb.MODE_AUTO)
out = sys.stdout
for line in open(sys.argv[2]):
    v = r.get(line.strip())
    out.write(json.dumps(v) + "\n")
`
		cmd := exec.Command(py, "-c", script, out, in)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		i := 0
		for sc.Scan() {
			p := probes[i]
			i++
			if p.row < 0 {
				if sc.Text() != "null" {
					t.Fatalf("%s: python found %s, want nothing", p.ip, sc.Text())
				}
				continue
			}
			var rec struct {
				ASN uint64 `json:"autonomous_system_number"`
				Org string `json:"autonomous_system_organization"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v (%s)", p.ip, err, sc.Text())
			}
			if want := rows[p.row]; rec.ASN != want.asn || rec.Org != want.org {
				t.Fatalf("%s: python got %+v, want %d %q", p.ip, rec, want.asn, want.org)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if i != len(probes) {
			t.Fatalf("python answered %d of %d", i, len(probes))
		}
	})

	t.Run("mmdblookup", func(t *testing.T) {
		tool := requireTool(t, "mmdblookup")
		// One process per address: a spread sample of 1500 addresses, plus
		// gaps, keeps this under a few seconds.
		step := max(len(probes)/1500, 1)
		checked := 0
		for i := 0; i < len(probes); i += step {
			p := probes[i]
			if p.row < 0 {
				continue
			}
			r := rows[p.row]
			for _, ip := range []netip.Addr{p.ip} {
				got, err := exec.Command(tool, "-f", out, "-i", ip.String(), "autonomous_system_number").Output()
				if err != nil {
					t.Fatalf("%s: %v", ip, err)
				}
				if want := fmt.Sprintf("%d <uint32>", r.asn); !strings.Contains(string(got), want) {
					t.Fatalf("%s: mmdblookup says %q, want %q", ip, got, want)
				}
				got, err = exec.Command(tool, "-f", out, "-i", ip.String(), "autonomous_system_organization").Output()
				if err != nil {
					t.Fatalf("%s: %v", ip, err)
				}
				if want := `"` + r.org + `" <utf8_string>`; !strings.Contains(string(got), want) {
					t.Fatalf("%s: mmdblookup says %q, want %q", ip, got, want)
				}
				checked++
			}
		}
		misses := 0
		for _, p := range probes {
			if p.row >= 0 || misses >= 200 {
				continue
			}
			misses++
			got, _ := exec.Command(tool, "-f", out, "-i", p.ip.String()).CombinedOutput()
			if !strings.Contains(string(got), "Could not find an entry") {
				t.Fatalf("%s: mmdblookup found %q, want nothing", p.ip, got)
			}
		}
		t.Logf("mmdblookup: %d addresses in ranges, %d gaps", checked, misses)
	})
}
