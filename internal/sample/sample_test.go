package sample

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func customersCSV(t testing.TB, n int, seed uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCustomers(&b, n, seed); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The table reads back with encoding/csv as the rows NewCustomer returns,
// its Customer Ids are unique (even ignoring case), and the same seed gives
// the same bytes while another seed does not.
func TestCustomers(t *testing.T) {
	const n = 20000 // several chunks, so the ordered parallel writer is exercised
	data := customersCSV(t, n, 1)
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n+1 || strings.Join(recs[0], ",") != strings.Join(CustomerHeader, ",") {
		t.Fatalf("%d records, header %q", len(recs), recs[0])
	}
	ids := map[string]bool{}
	idRE := regexp.MustCompile(`^[0-9a-fA-F]{15}$`)
	commas := 0
	for i, rec := range recs[1:] {
		want := NewCustomer(1, i+1).Fields()
		if strings.Join(rec, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("row %d: read %q, NewCustomer gives %q", i+1, rec, want)
		}
		if !idRE.MatchString(rec[1]) {
			t.Fatalf("row %d: Customer Id %q", i+1, rec[1])
		}
		id := strings.ToLower(rec[1])
		if ids[id] {
			t.Fatalf("row %d: Customer Id %q repeats", i+1, rec[1])
		}
		ids[id] = true
		if _, err := time.Parse(time.DateOnly, rec[10]); err != nil {
			t.Fatalf("row %d: date: %v", i+1, err)
		}
		if strings.ContainsRune(rec[4]+rec[6], ',') {
			commas++
		}
	}
	if commas == 0 {
		t.Fatal("no Company or Country holds a comma: the quoting is not exercised")
	}
	if !bytes.Equal(data, customersCSV(t, n, 1)) {
		t.Fatal("the same seed gave different bytes")
	}
	if bytes.Equal(data, customersCSV(t, n, 2)) {
		t.Fatal("seeds 1 and 2 gave the same table")
	}
	// Row i does not depend on the number of rows.
	if small := customersCSV(t, 100, 1); !bytes.HasPrefix(data, small) {
		t.Fatal("the first 100 rows differ between a 100-row and a 20,000-row table")
	}
}

func TestSites(t *testing.T) {
	for _, n := range []int{1, 16, 17, 300, MaxSites} {
		var b bytes.Buffer
		if err := WriteSites(&b, n, 3); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2*n+1 {
			t.Fatalf("%d sites: %d records", n, len(recs))
		}
		step := 1
		if n > 1000 {
			step = 61 // the largest table: a sample of its sites, each with its predecessor
		}
		for i := 0; i < n; i += step {
			s := NewSite(3, n, i)
			r4, r6 := recs[1+2*i], recs[2+2*i]
			if r4[0] != s.IPv4.String() || r6[0] != s.IPv6.String() || r4[1] != s.Name || r6[2] != s.City {
				t.Fatalf("site %d: rows %q %q, NewSite %+v", i, r4, r6, s)
			}
			if lat, _ := strconv.ParseFloat(r4[5], 64); lat != s.Lat || lat < -90 || lat > 90 {
				t.Fatalf("site %d: lat %q", i, r4[5])
			}
			// Networks do not overlap and lie in 10/8 and fd6c:7574::/32.
			if prev := NewSite(3, n, max(i-1, 0)); i > 0 && (prev.IPv4.Overlaps(s.IPv4) || prev.IPv6.Overlaps(s.IPv6)) {
				t.Fatalf("sites %d and %d overlap", i-1, i)
			}
			if !netip.MustParsePrefix("10.0.0.0/8").Contains(s.IPv4.Addr()) || s.IPv4.Bits() > 24 {
				t.Fatalf("site %d: %v", i, s.IPv4)
			}
			for _, p := range []netip.Prefix{s.IPv4, s.IPv6} {
				if j, ok := SiteOf(n, p.Addr()); !ok || j != i {
					t.Fatalf("SiteOf(%d, %v) = %d, %v; want %d", n, p.Addr(), j, ok, i)
				}
				if p.Masked() != p {
					t.Fatalf("site %d: %v has host bits", i, p)
				}
			}
		}
	}
	if err := WriteSites(io.Discard, 0, 1); err == nil {
		t.Fatal("0 sites: no error")
	}
	if err := WriteSites(io.Discard, MaxSites+1, 1); err == nil {
		t.Fatal("too many sites: no error")
	}
}

var (
	re5424 = regexp.MustCompile(`^<134>1 (\S+) (\S+) (\S+) (\d+) (\S+) - cust=(\S+) src=(\S+) action=(\S+)$`)
	re3164 = regexp.MustCompile(`^<134>([A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d) (\S+) (\S+)\[(\d+)\]: cust=(\S+) src=(\S+) action=(\S+)$`)
)

func TestEvents(t *testing.T) {
	const n = 10000
	o := EventOptions{Seed: 5, Customers: 500, Sites: 40, Internal: 60, IPv6: 30, Miss: 10}
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	var counts struct{ miss, site, v6, public int }
	for _, format := range Formats {
		o.Format = format
		var b bytes.Buffer
		if err := WriteEvents(&b, 0, n, o); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("%s: %d lines", format, len(lines))
		}
		for i, line := range lines {
			e := o.Event(i)
			var cust, src string
			switch format {
			case RFC5424:
				m := re5424.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("%s line %d: %q", format, i, line)
				}
				ts, err := time.Parse(time.RFC3339Nano, m[1])
				if err != nil || !ts.Equal(e.Time) {
					t.Fatalf("line %d: time %q, want %v (%v)", i, m[1], e.Time, err)
				}
				cust, src = m[6], m[7]
			case RFC3164:
				m := re3164.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("%s line %d: %q", format, i, line)
				}
				cust, src = m[5], m[6]
			case JSON:
				var v map[string]string
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("line %d: %v: %q", i, err, line)
				}
				cust, src = v["cust"], v["src"]
			}
			if cust != e.Cust || src != e.Src.String() {
				t.Fatalf("%s line %d: cust %q src %q, Event gives %q %v", format, i, cust, src, e.Cust, e.Src)
			}
			if format != RFC5424 {
				continue
			}
			addr := netip.MustParseAddr(src)
			if k, err := strconv.Atoi(cust); err == nil {
				if k < 1 || k > 500 {
					t.Fatalf("line %d: cust %d outside 1..500", i, k)
				}
			} else {
				counts.miss++
			}
			if j, ok := SiteOf(40, addr); ok {
				counts.site++
				s := NewSite(o.Seed, 40, j)
				if e.Site != j || !s.IPv4.Contains(addr) && !s.IPv6.Contains(addr) {
					t.Fatalf("line %d: %v is in site %d, Event says %d", i, addr, j, e.Site)
				}
				if addr.Is6() {
					counts.v6++
				}
			} else {
				counts.public++
				if e.Site != -1 || !addr.Is4() || addr.IsPrivate() || !addr.IsGlobalUnicast() {
					t.Fatalf("line %d: public address %v (site %d)", i, addr, e.Site)
				}
			}
		}
	}
	// The shares are what was asked for, within a few percent.
	near := func(what string, got, want float64) {
		if got < want-3 || got > want+3 {
			t.Errorf("%s: %.1f%%, want about %g%%", what, got, want)
		}
	}
	near("misses", 100*float64(counts.miss)/n, 10)
	near("site addresses", 100*float64(counts.site)/n, 60)
	near("IPv6 of site addresses", 100*float64(counts.v6)/float64(counts.site), 30)

	bad := []EventOptions{{Format: "cef"}, {Customers: -1}, {Sites: MaxSites + 1}, {Miss: 101}}
	for _, o := range bad {
		if err := o.Check(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// Generating 2M customers must take seconds, not minutes.
func BenchmarkCustomers(b *testing.B) {
	var n int64
	for b.Loop() {
		var w countWriter
		if err := WriteCustomers(&w, 200000, 1); err != nil {
			b.Fatal(err)
		}
		n = int64(w)
	}
	b.SetBytes(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200000, "ns/row")
}

func BenchmarkEvents(b *testing.B) {
	for b.Loop() {
		if err := WriteEvents(io.Discard, 0, 200000, EventOptions{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200000, "ns/event")
}

type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

func TestDomains(t *testing.T) {
	const n = 20000
	var buf bytes.Buffer
	if err := WriteDomains(&buf, n, 3); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if lines[0] != "domain,threat,source" || len(lines) != n+1 {
		t.Fatalf("header %q, %d lines", lines[0], len(lines))
	}
	listed := map[string]bool{}
	for i, l := range lines[1:] {
		name, _, _ := strings.Cut(l, ",")
		if listed[name] {
			t.Fatalf("domain %q twice", name)
		}
		listed[name] = true
		if d := NewDomain(3, i); d.Name != name {
			t.Fatalf("row %d: %q, NewDomain says %q", i, name, d.Name)
		}
	}
	// listedSuffix returns the listed domain name is at or under, or "".
	listedSuffix := func(name string) string {
		for s := name; ; {
			if listed[s] {
				return s
			}
			_, rest, ok := strings.Cut(s, ".")
			if !ok {
				return ""
			}
			s = rest
		}
	}
	plain := EventOptions{Seed: 9}
	with := EventOptions{Seed: 9, Domains: n, IoC: 30, DomainSeed: 3}
	for _, o := range []*EventOptions{&plain, &with} {
		if err := o.Check(); err != nil {
			t.Fatal(err)
		}
	}
	hits := 0
	for i := range 10000 {
		e, p := with.Event(i), plain.Event(i)
		if e.Cust != p.Cust || e.Src != p.Src || e.Action != p.Action || p.Dom != "" {
			t.Fatalf("event %d: --domains changed its other fields: %+v against %+v", i, e, p)
		}
		got := listedSuffix(e.Dom)
		if e.Listed >= 0 {
			hits++
			if want := NewDomain(3, e.Listed).Name; got != want {
				t.Fatalf("event %d: dom %q is listed as under %q, matches %q", i, e.Dom, want, got)
			}
		} else if got != "" {
			t.Fatalf("event %d: benign dom %q is under the listed %q", i, e.Dom, got)
		}
		if line := string(with.AppendEvent(nil, i)); !strings.HasSuffix(line, " dom="+e.Dom+"\n") {
			t.Fatalf("event %d: %q does not end with its dom", i, line)
		}
		if line := string(plain.AppendEvent(nil, i)); strings.Contains(line, "dom=") {
			t.Fatalf("event %d without --domains: %q", i, line)
		}
	}
	if hits < 2700 || hits > 3300 {
		t.Errorf("%d of 10000 events under a listed domain, want about 30%%", hits)
	}
	bad := EventOptions{IoC: 5}
	if err := bad.Check(); err == nil {
		t.Error("--ioc without --domains accepted")
	}
}
