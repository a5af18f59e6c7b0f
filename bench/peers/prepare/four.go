package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	"github.com/lutkit/lutkit/internal/sample"
)

// The four-lookup workload: events-1m-dom.rfc5424 (cust, src and dom) with
// the customers .lut, the city .mmdb, an asset CIDR .mmdb on src and an IoC
// exact-key .lut on dom, for enrichd, rsyslog and syslog-ng.

// assetSites is the number of sites of the asset table: 10.0.0.0/8 cut
// into /24s (and an IPv6 /48 each), so that every internal address of the
// events (drawn from the 64 sites of "lut sample events") is in one of its
// networks.
const assetSites = sample.MaxSites

// enrichd1YAML: the customer lookup alone.
const enrichd1YAML = `tables: {path: %s, verify: none}
rules:
  - {name: customer, table: customers, field: cust, target: customer,
     on_miss: {tag: customer_miss, defaults: {status: MISS}}}
`

// enrichdAssetRule is the third lookup: src in the asset CIDR table, the
// network's site and zone copied.
const enrichdAssetRule = `  - {name: asset, table: assets, field: src, target: asset,
     mmdb_fields: {site: site, zone: zone}}
`

// enrichdIoCExactRule is the fourth lookup: dom in the exact-key IoC
// table (the domains of ioc.csv as they are listed, no suffix match).
const enrichdIoCExactRule = `  - {name: ioc, table: iocx, field: dom, target: threat, columns: [threat, source]}
`

// prepareFour writes the four-lookup data set (ioc.csv and the customer
// and city tables are made before).
func prepareFour(tables, ioc string) {
	sites := "sites-asset.csv"
	step(sites, func(w io.Writer) error { return sample.WriteSites(w, assetSites, 1) })
	sitesPath := dataPath(sites)
	stepFile("enrichd-tables/assets.mmdb", func(tmp string) error {
		return run(*lut, "compile", "--mmdb", "--network", "network",
			"--field", "site=site", "--field", "zone=zone", "--out", tmp, sitesPath)
	})
	stepFile("enrichd-tables/iocx.lut", func(tmp string) error {
		return run(*lut, "compile", "--key", "domain", "--out", tmp+".lut", ioc)
	})
	step("rsyslog-asset.json", func(w io.Writer) error { return withCSV(sitesPath, w, assetSparseArray) })
	step("rsyslog-ioc.json", func(w io.Writer) error { return withCSV(ioc, w, iocStringTable) })
	step("syslog-ng-ioc.csv", func(w io.Writer) error { return withCSV(ioc, w, iocContextCSV) })
	for name, yaml := range map[string]string{
		"enrichd-1.yaml": enrichd1YAML,
		"enrichd-3.yaml": enrichdYAML + enrichdAssetRule,
		"enrichd-4.yaml": enrichdYAML + enrichdAssetRule + enrichdIoCExactRule,
	} {
		step(name, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, yaml, tables)
			return err
		})
	}
}

func dataPath(name string) string { return filepath.Join(*data, name) }

// withCSV reads the CSV at path (header first) and hands its rows to fn.
func withCSV(path string, w io.Writer, fn func(w io.Writer, rows [][]string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 {
		return fmt.Errorf("%s: no rows", path)
	}
	return fn(w, rows[1:])
}

// assetSparseArray writes rsyslog's lookup_table of type sparseArray for
// the IPv4 networks of the sites CSV (network,site,city,country,zone,...):
// rsyslog's lookup of a sparseArray returns the value of the largest index
// at or below the key, so with ip42num() of the address as the key each
// network's first address maps to "site|zone", and the address after each
// network that no other network starts at maps to MISS. rsyslog has no
// IPv6 form: the IPv6 networks are left out (ip42num of an IPv6 address is
// -1, below every index: nomatch, MISS).
func assetSparseArray(w io.Writer, rows [][]string) error {
	type span struct {
		from, end uint64 // first address, one past the last
		value     string
	}
	var spans []span
	for _, r := range rows {
		if len(r) < 5 {
			return fmt.Errorf("sites row %q: want network,site,city,country,zone", r)
		}
		p, err := netip.ParsePrefix(r[0])
		if err != nil {
			return err
		}
		if !p.Addr().Is4() {
			continue
		}
		a := p.Masked().Addr().As4()
		from := uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8 | uint64(a[3])
		spans = append(spans, span{from, from + 1<<(32-p.Bits()), r[1] + "|" + r[4]})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	if _, err := io.WriteString(w, `{"version":1,"nomatch":"MISS","type":"sparseArray","table":[`+"\n"); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	type entry struct {
		Index uint64 `json:"index"`
		Value string `json:"value"`
	}
	for i, s := range spans {
		if i > 0 && spans[i-1].end > s.from {
			return fmt.Errorf("sites: networks overlap at %d", s.from)
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(entry{s.from, s.value}); err != nil {
			return err
		}
		if i+1 == len(spans) || spans[i+1].from != s.end {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
			if err := enc.Encode(entry{s.end, "MISS"}); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, "]}\n")
	return err
}

// iocStringTable writes rsyslog's lookup_table of type string for the IoC
// list (domain,threat,source): key the domain, value "threat|source".
func iocStringTable(w io.Writer, rows [][]string) error {
	if _, err := io.WriteString(w, `{"version":1,"nomatch":"MISS","type":"string","table":[`+"\n"); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i, r := range rows {
		if len(r) < 3 {
			return fmt.Errorf("ioc row %q: want domain,threat,source", r)
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(struct {
			Index string `json:"index"`
			Value string `json:"value"`
		}{r[0], r[1] + "|" + r[2]}); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]}\n")
	return err
}

// iocContextCSV writes add-contextual-data's database for the IoC list:
// selector,name,value, two lines per domain, and the MISS selector of
// default-selector("MISS").
func iocContextCSV(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"MISS", "threat", "MISS"}); err != nil {
		return err
	}
	for _, r := range rows {
		if len(r) < 3 {
			return fmt.Errorf("ioc row %q: want domain,threat,source", r)
		}
		if err := cw.Write([]string{r[0], "threat", sngLiteral(r[1])}); err != nil {
			return err
		}
		if err := cw.Write([]string{r[0], "source", sngLiteral(r[2])}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
