package memcached

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// iocValue is what enrichd with max_matches: 3 answers for
// ioc:a.x.c2.evil.com: the three suffixes of the name that the IoC table
// lists, the longest first.
const iocValue = `[{"domain":"x.c2.evil.com","threat":"beacon"},{"domain":"c2.evil.com","threat":"botnet"},{"domain":"*.evil.com","threat":"malware"}]`

// TestMaxMatchesClients is memcached.max_matches read by real clients:
// Debian's pymemcache (get, get_many) and Dalli 3.0.6 called as
// logstash-filter-memcached calls it (binary get_multi) read, for a name
// below three listed suffixes of a suffix table, the array of the three
// rows, the most specific first; a name below none misses; an exact
// table's key answers an array of its one row.
func TestMaxMatchesClients(t *testing.T) {
	py := needPython(t, "pymemcache", "python3-pymemcache")
	rb := needRuby(t, "dalli", "ruby-dalli")
	addr := startEnrichd(t, enrichdOpts{extra: "  max_matches: 3\n", tables: func(dir string) {
		csv := filepath.Join(dir, "..", "ioc.csv")
		body := "domain,threat\n*.evil.com,malware\nc2.evil.com,botnet\nx.c2.evil.com,beacon\ngood.org,none\n"
		if err := os.WriteFile(csv, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(filepath.Join(bin, "lut"), "compile", "--key", "domain", "--match", "suffix",
			"--out", filepath.Join(dir, "ioc.lut"), csv).CombinedOutput(); err != nil {
			t.Fatalf("lut compile: %v\n%s", err, out)
		}
	}})
	host, port, _ := strings.Cut(addr, ":")
	const code = `
import sys
from pymemcache.client.base import Client
c = Client((sys.argv[1], int(sys.argv[2])))
print(c.get("ioc:a.x.c2.evil.com").decode())
print(c.get("ioc:notevil.com"))
m = c.get_many(["ioc:www.evil.com", "customers:42", "ioc:nope.org"])
for k in sorted(m):
    print(k, m[k].decode())
`
	got := script(t, py, "-c", code, host, port)
	cust, ok := value(t, addr, "customers:42")
	if !ok || !strings.HasPrefix(string(cust), `[{"cust":"42","name":"Acme Widgets"`) || !strings.HasSuffix(string(cust), "}]") {
		t.Fatalf("customers:42 with max_matches: %q", cust)
	}
	want := iocValue + "\nNone\n" +
		"customers:42 " + string(cust) + "\n" +
		`ioc:www.evil.com [{"domain":"*.evil.com","threat":"malware"}]` + "\n"
	if got != want {
		t.Errorf("pymemcache against enrichd:\n%s\nwant:\n%s", got, want)
	}
	got = script(t, rb, "testdata/logstash_filter.rb", addr, "", "ioc:a.x.c2.evil.com", "ioc:notevil.com", "--", "ioc:www.evil.com")
	want = "protocol Dalli::Protocol::Binary\n" +
		"event 0 ioc:a.x.c2.evil.com=" + digest([]byte(iocValue)) + "\n" +
		"event 1 ioc:www.evil.com=" + digest([]byte(`[{"domain":"*.evil.com","threat":"malware"}]`)) + "\n"
	if got != want {
		t.Errorf("Dalli against enrichd:\n%s\nwant:\n%s", got, want)
	}
}
