package mmdb_test

import (
	"fmt"
	"net/netip"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// cityTest is MaxMind's test city database, committed under testdata/.
const cityTest = "../../testdata/maxmind/test-data/GeoIP2-City-Test.mmdb"

// Open takes options (here WithVerify, the full check of a file from an
// untrusted source); LookupFields then decodes only the compiled paths.
func ExampleOpen() {
	r, err := mmdb.Open(cityTest, mmdb.WithVerify())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fields, err := mmdb.CompileFields("country.iso_code", "city.names.en", "location.time_zone")
	if err != nil {
		fmt.Println(err)
		return
	}
	out := make([]mmdb.Value, fields.Len())
	for _, ip := range []string{"81.2.69.142", "10.0.0.1"} {
		m, err := r.LookupFields(netip.MustParseAddr(ip), fields, out)
		if err != nil {
			fmt.Println(err)
			return
		}
		if !m.Found() {
			fmt.Printf("%s: not found (in %s)\n", ip, m.Prefix())
			continue
		}
		fmt.Printf("%s: %s %s %s (network %s)\n", ip, out[0], out[1], out[2], m.Prefix())
	}
	// Output:
	// 81.2.69.142: GB London Europe/London (network 81.2.69.142/31)
	// 10.0.0.1: not found (in 10.0.0.0/8)
}

// LookupFieldsBatch looks many addresses up together: address i's values
// are out[i*fields.Len():(i+1)*fields.Len()].
func ExampleReader_LookupFieldsBatch() {
	r, err := mmdb.Open(cityTest)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fields, err := mmdb.CompileFields("country.iso_code", "city.names.en")
	if err != nil {
		fmt.Println(err)
		return
	}
	addrs := []netip.Addr{netip.MustParseAddr("81.2.69.142"), netip.MustParseAddr("2001:218::1"), netip.MustParseAddr("10.0.0.1")}
	out := make([]mmdb.Value, len(addrs)*fields.Len())
	matches := make([]mmdb.Match, len(addrs))
	if err := r.LookupFieldsBatch(addrs, fields, out, matches); err != nil {
		fmt.Println(err)
		return
	}
	for i, ip := range addrs {
		v := out[i*fields.Len() : (i+1)*fields.Len()]
		fmt.Printf("%s: found %t, country %q, city %q\n", ip, matches[i].Found(), v[0], v[1])
	}
	// Output:
	// 81.2.69.142: found true, country "GB", city "London"
	// 2001:218::1: found true, country "JP", city ""
	// 10.0.0.1: found false, country "", city ""
}
