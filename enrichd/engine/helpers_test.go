package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/enrichd/internal/enrichtest"
	"github.com/lutkit/lutkit/internal/kafkatest"
	"github.com/lutkit/lutkit/internal/testfiles"
)

// buildCustomers compiles an n-row customers table to path. Row i has
// Index i, Customer Id "C<i>-<version>" and Email "u<i>@v<version>.example".
var buildCustomers = kafkatest.BuildCustomers

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

// linkMMDB makes the real city MMDB table geo of dir.
func linkMMDB(t testing.TB, dir string) {
	t.Helper()
	if err := os.Symlink(testfiles.CityMMDB(t), filepath.Join(dir, "geo.mmdb")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
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

// The test events and reading the output, shared with the engine's tests.
var (
	decode = enrichtest.Decode
	get    = enrichtest.Get
	event  = enrichtest.Event
)
