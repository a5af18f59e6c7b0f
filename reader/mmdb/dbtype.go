package mmdb

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Model is the GeoIP2 record model a typed reader method decodes.
type Model string

// Models whose database type rules are known.
const (
	ModelCity Model = "City"
	ModelASN  Model = "ASN"
)

// ModelOf returns the model a database type claims: City for a type
// containing "City", ASN for one containing "ASN", else "" (a type no
// typed reader is meant to read as a city or ASN file).
func ModelOf(databaseType string) Model {
	switch {
	case strings.Contains(databaseType, "City"):
		return ModelCity
	case strings.Contains(databaseType, "ASN"):
		return ModelASN
	}
	return ""
}

// TypeRule is the database type rule of one typed reader for one model, as
// read in that reader's source.
type TypeRule struct {
	Reader string // the reader (and method)
	Rule   string // the rule, in short
	Source string // where the rule is: repository, version, file
	// Warns is true when a type the rule does not accept still works, with a
	// warning logged.
	Warns   bool
	accepts func(string) bool
}

// Accepts reports whether the reader reads a file of this database type.
func (r TypeRule) Accepts(databaseType string) bool { return r.accepts(databaseType) }

func exact(types ...string) func(string) bool {
	return func(t string) bool { return slices.Contains(types, t) }
}

func contains(sub string) func(string) bool {
	return func(t string) bool { return strings.Contains(t, sub) }
}

// esMaxmindType is Elasticsearch's rule for MaxMind-style files: not an
// IPinfo type (which starts with "ipinfo", any case) and a case-sensitive
// suffix.
func esMaxmindType(suffix string) func(string) bool {
	return func(t string) bool {
		return !strings.HasPrefix(strings.ToLower(t), "ipinfo") && strings.HasSuffix(t, suffix)
	}
}

// esVendor is the geoip processor's vendor check: other types work but log
// a deprecation warning.
func esVendor(t string) bool {
	l := strings.ToLower(t)
	return strings.HasPrefix(l, "geoip2") || strings.HasPrefix(l, "geolite2")
}

var (
	perlCity = regexp.MustCompile(`^(?:GeoLite2|GeoIP2)-(?:Precision-|)?City(-[a-zA-Z\-]+)?$`)
	perlASN  = regexp.MustCompile(`^GeoLite2-ASN$`)
)

// logstashOldCity are the city types of logstash-filter-geoip 7.2.x, which
// matches types exactly.
var logstashOldCity = []string{"GeoLite2-City", "GeoIP2-City", "GeoIP2-City-Africa",
	"GeoIP2-City-Asia-Pacific", "GeoIP2-City-Europe", "GeoIP2-City-North-America", "GeoIP2-City-South-America"}

// geoip2GolangCity are the types geoip2-golang v2 opens for City lookups
// (getDBType: an exact list; Open fails for any type not listed).
var geoip2GolangCity = []string{"DBIP-City-Lite", "DBIP-Country-Lite", "DBIP-Country",
	"DBIP-Location (compat=City)", "GeoLite2-City", "GeoIP-City-Redacted-US", "GeoIP2-City",
	"GeoIP2-City-Africa", "GeoIP2-City-Asia-Pacific", "GeoIP2-City-Europe",
	"GeoIP2-City-North-America", "GeoIP2-City-South-America", "GeoIP2-Precision-City",
	"GeoLite2-Country", "GeoIP2-Country", "DBIP-ISP (compat=Enterprise)",
	"DBIP-Location-ISP (compat=Enterprise)", "GeoIP-Enterprise-Redacted-US", "GeoIP2-Enterprise"}

// TypeRules are the database type rules of the typed readers, by model.
// docs/mmdb.md lists them with their sources.
var TypeRules = map[Model][]TypeRule{
	ModelCity: {
		{Reader: "Logstash geoip filter 7.2.x (Logstash 8.14 and older)", Rule: "is one of " + strings.Join(logstashOldCity, ", "),
			Source: "logstash-filter-geoip v7.2.13 GeoIPFilter.java", accepts: exact(logstashOldCity...)},
		{Reader: "Logstash geoip filter 7.3 and later (Logstash 8.15 and later)", Rule: `contains "City"`,
			Source: "logstash-filter-geoip Database.java (v8.0.0), through GeoIP2-java", accepts: contains("City")},
		{Reader: readerES, Rule: `ends in "-City" and does not start with "ipinfo"`,
			Source: "elasticsearch modules/ingest-geoip MaxmindIpDataLookups.java, IpDataLookupFactories.java", accepts: esMaxmindType("-City")},
		{Reader: readerES + " geoip processor (not ip_location)", Rule: `starts with GeoIP2 or GeoLite2 (any case)`, Warns: true,
			Source: "elasticsearch modules/ingest-geoip GeoIpProcessor.java (PR #114527)", accepts: esVendor},
		{Reader: "GeoIP2-java DatabaseReader.city()", Rule: `contains "City" or "Enterprise"`,
			Source: "GeoIP2-java DatabaseReader.java (v4.4.0; the same since v2.13.0)", accepts: func(t string) bool { return contains("City")(t) || contains("Enterprise")(t) }},
		{Reader: readerPerl + "->city()", Rule: "matches " + perlCity.String(),
			Source: "GeoIP2-perl 2.006002 lib/GeoIP2/Database/Reader.pm", accepts: perlCity.MatchString},
		{Reader: "Python geoip2 Reader.city()", Rule: `contains "City"`,
			Source: "GeoIP2-python geoip2/database.py (2.9.0 and 5.x)", accepts: contains("City")},
		{Reader: "GeoIP2-dotnet DatabaseReader.City()", Rule: `contains "City"`,
			Source: "GeoIP2-dotnet MaxMind.GeoIP2/DatabaseReader.cs", accepts: contains("City")},
		{Reader: "GeoIP2-node Reader city()", Rule: `contains "City"`,
			Source: "GeoIP2-node src/readerModel.ts", accepts: contains("City")},
		{Reader: "geoip2-golang v2 City()", Rule: "is one of a fixed list (GeoLite2-City, GeoIP2-City, GeoIP2-City-<region>, ...)",
			Source: "geoip2-golang v2.5.0 reader.go getDBType", accepts: exact(geoip2GolangCity...)},
	},
	ModelASN: {
		{Reader: "Logstash geoip filter 7.2.x (Logstash 8.14 and older)", Rule: "is exactly GeoLite2-ASN",
			Source: "logstash-filter-geoip v7.2.13 GeoIPFilter.java", accepts: exact("GeoLite2-ASN")},
		{Reader: "Logstash geoip filter 7.3 and later (Logstash 8.15 and later)", Rule: `contains "GeoLite2-ASN" (and not "City", "Country" or "GeoIP2-Domain", which it tries first)`,
			Source: "logstash-filter-geoip Database.java (v8.0.0)", accepts: func(t string) bool {
				return contains("GeoLite2-ASN")(t) && !contains("City")(t) && !contains("Country")(t) && !contains("GeoIP2-Domain")(t)
			}},
		{Reader: readerES, Rule: `ends in "-ASN" and does not start with "ipinfo"`,
			Source: "elasticsearch modules/ingest-geoip MaxmindIpDataLookups.java, IpDataLookupFactories.java", accepts: esMaxmindType("-ASN")},
		{Reader: readerES + " geoip processor (not ip_location)", Rule: `starts with GeoIP2 or GeoLite2 (any case)`, Warns: true,
			Source: "elasticsearch modules/ingest-geoip GeoIpProcessor.java (PR #114527)", accepts: esVendor},
		{Reader: "GeoIP2-java DatabaseReader.asn()", Rule: `contains "GeoLite2-ASN"`,
			Source: "GeoIP2-java DatabaseReader.java (v4.4.0)", accepts: contains("GeoLite2-ASN")},
		{Reader: readerPerl + "->asn()", Rule: "matches " + perlASN.String(),
			Source: "GeoIP2-perl 2.006002 lib/GeoIP2/Database/Reader.pm", accepts: perlASN.MatchString},
		{Reader: "Python geoip2 Reader.asn()", Rule: `contains "GeoLite2-ASN"`,
			Source: "GeoIP2-python geoip2/database.py (2.9.0 and 5.x)", accepts: contains("GeoLite2-ASN")},
		{Reader: "GeoIP2-dotnet DatabaseReader.Asn()", Rule: `contains "GeoLite2-ASN"`,
			Source: "GeoIP2-dotnet MaxMind.GeoIP2/DatabaseReader.cs", accepts: contains("GeoLite2-ASN")},
		{Reader: "GeoIP2-node Reader asn()", Rule: `contains "ASN"`,
			Source: "GeoIP2-node src/readerModel.ts", accepts: contains("ASN")},
		{Reader: "geoip2-golang v2 ASN()", Rule: "is one of GeoLite2-ASN, DBIP-ASN-Lite (compat=GeoLite2-ASN), GeoIP2-ISP, GeoIP2-Precision-ISP",
			Source:  "geoip2-golang v2.5.0 reader.go getDBType",
			accepts: exact("GeoLite2-ASN", "DBIP-ASN-Lite (compat=GeoLite2-ASN)", "GeoIP2-ISP", "GeoIP2-Precision-ISP")},
	},
}

// RecommendedType is the database type of each model that every reader in
// TypeRules accepts without a warning.
var RecommendedType = map[Model]string{ModelCity: "GeoLite2-City", ModelASN: "GeoLite2-ASN"}

// TypeFindings returns a finding for every typed reader that refuses (or
// warns about) databaseType when reading model m. For m == "" it returns
// nothing: such files are for untyped readers.
func TypeFindings(databaseType string, m Model) []Finding {
	var out []Finding
	for _, r := range TypeRules[m] {
		if r.Accepts(databaseType) {
			continue
		}
		what := "refuses"
		if r.Warns {
			what = "logs a deprecation warning for"
		}
		out = append(out, Finding{Reader: r.Reader, Problem: fmt.Sprintf(
			"%s database type %q (it wants one that %s; %s is accepted by every reader listed)", what, databaseType, r.Rule, RecommendedType[m])})
	}
	return out
}
