// Package iptable compiles IP-keyed sources (CSV ranges, CSV networks,
// address lists and existing MMDB files) into one MaxMind DB file that
// Logstash's geoip filter, Elasticsearch's geoip processor and MaxMind
// readers can load.
//
// # Layering
//
// Sources are applied in the order given. Within one source the more
// specific network wins where networks overlap (equal networks: the later
// row wins). Across sources a later source wins over an earlier one wherever
// they overlap, whatever the prefix lengths, combined with the earlier data
// as its Merge mode says: Replace drops the earlier record, MergeTop replaces
// top-level keys, MergeDeep merges maps recursively (arrays element by
// element).
//
// # Profiles
//
// ProfileCity and ProfileASN write the record shapes and exact value types
// the Java GeoIP2 reader (used by Logstash and Elasticsearch) expects, keep
// custom fields under one top-level key (Options.CustomKey), and in city
// files always give a location. ProfileCustom writes records as mapped.
//
// # Sources and options
//
// CSV sources are read by compile/source's CSV reader (source.CSVRecords),
// address lists through source.OpenText; bad rows are *source.RowError,
// naming file:line:column. Options and Source are the serialisable specs
// of a build, which "lut compile" flags and tables.yaml decode into; their
// Validate methods check them, and Compile applies the defaults.
//
// # Output
//
// Compile writes to a temporary file in the target directory, checks it
// (see Check), and renames it into place; the same inputs and build epoch
// give the same bytes.
package iptable

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// Profile selects the record shape and metadata conventions.
type Profile string

// Profiles.
const (
	ProfileCustom Profile = "custom"
	ProfileCity   Profile = "city"
	ProfileASN    Profile = "asn"
	// ProfileAuto (only for Check) picks city or asn from the database
	// type, else custom.
	ProfileAuto Profile = ""
)

// ParseProfile parses "city", "asn" or "custom".
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(strings.ToLower(s)); p {
	case ProfileCity, ProfileASN, ProfileCustom:
		return p, nil
	}
	return "", fmt.Errorf("unknown profile %q (want city, asn or custom)", s)
}

// Merge says how a source's record combines with data already present for
// the same addresses.
type Merge int

// Merge modes.
const (
	Replace   Merge = iota // the new record replaces the old one
	MergeTop               // top-level keys of the new record replace the old ones
	MergeDeep              // maps merge recursively; arrays element by element
)

// ParseMerge parses "replace", "top" or "deep".
func ParseMerge(s string) (Merge, error) {
	switch strings.ToLower(s) {
	case "replace":
		return Replace, nil
	case "top", "top-level", "toplevel":
		return MergeTop, nil
	case "deep":
		return MergeDeep, nil
	}
	return 0, fmt.Errorf("unknown merge mode %q (want replace, top or deep)", s)
}

func (m Merge) String() string {
	switch m {
	case MergeTop:
		return "top"
	case MergeDeep:
		return "deep"
	}
	return "replace"
}

// SourceKind is the shape of a source file.
type SourceKind int

// Source kinds.
const (
	// CSVRanges: one row per inclusive range, StartColumn and EndColumn
	// holding addresses or integers.
	CSVRanges SourceKind = iota
	// CSVNetworks: one row per network, NetworkColumn holding a CIDR or a
	// single address.
	CSVNetworks
	// List: one address, CIDR or start-end range per line; "#" and ";"
	// start comments. Records are the source's constants.
	List
	// Base: an existing MMDB whose networks and records are copied.
	Base
)

// Source is one input of a build. CSV and list files may be gzip
// compressed. It is the serialisable spec of a source: "lut compile"
// flags and a tables.yaml source entry of an .mmdb table decode into it
// (the json names are the tables.yaml keys), and Validate checks it the
// same way for both.
type Source struct {
	Path string `json:"path"`
	// Kind is the shape of the file: "type" in tables.yaml (ranges,
	// networks, list or mmdb; see GuessKind).
	Kind SourceKind `json:"type"`
	// Columns names the columns of a CSV file without a header row. Empty
	// means the first row is the header.
	Columns []string `json:"columns,omitempty"`
	// Delimiter is the CSV field delimiter (default: a tab for a .tsv or
	// .tab file, ',' otherwise).
	Delimiter source.Delimiter `json:"delimiter,omitempty"`
	// Quote is the CSV quoting, as source.Options.Quote: csv (the
	// default when empty) or none.
	Quote string `json:"quote,omitempty"`
	// StartColumn and EndColumn name the range columns (CSVRanges).
	StartColumn string `json:"start_column,omitempty"`
	EndColumn   string `json:"end_column,omitempty"`
	// NetworkColumn names the CIDR column (CSVNetworks).
	NetworkColumn string `json:"network_column,omitempty"`
	// Family is 4 or 6 to read integer range bounds as IPv4 or IPv6; 0
	// means IPv4 when both bounds fit in 32 bits.
	Family int `json:"family,omitempty"`
	// Fields map columns to record fields. Empty means every column other
	// than the range or network columns, under its own name.
	Fields []Field `json:"fields,omitempty"`
	// Set adds constant fields to every record of the source.
	Set []Constant `json:"set,omitempty"`
	// Merge combines the source's records with earlier sources' data.
	Merge Merge `json:"merge,omitempty"`
}

// Options configure a build. The fields with a json name are the
// serialisable spec of an .mmdb table: "lut compile" flags and a
// tables.yaml table decode into them (the json names are the tables.yaml
// keys), and Validate checks them the same way for both.
type Options struct {
	Profile Profile `json:"profile,omitempty"`
	// DatabaseType is the metadata database_type. Empty means
	// "Lutkit-City", "Lutkit-ASN" or "Lutkit-Custom" by profile.
	DatabaseType string `json:"database_type,omitempty"`
	// Description is the English description (default names the profile).
	Description string `json:"description,omitempty"`
	// Languages default to ["en"].
	Languages []string `json:"languages,omitempty"`
	// IPVersion is 6 (default; IPv4 data sits under ::/96 with the usual
	// aliases) or 4.
	IPVersion int `json:"ip_version,omitempty"`
	// RecordSize is 24, 28 (default) or 32 bits.
	RecordSize int `json:"record_size,omitempty"`
	// BuildEpoch is the build time in Unix seconds. 0 means
	// SOURCE_DATE_EPOCH from the environment, else the current time.
	BuildEpoch int64 `json:"-"`
	// CustomKey is the top-level key holding fields outside the profile's
	// schema (city and asn profiles). Default "x_internal".
	CustomKey string `json:"custom_key,omitempty"`
	// IPv4Aliases says whether an IPv6 file aliases ::ffff:0:0/96,
	// 2001::/32 and 2002::/16 to the IPv4 data (see AliasMode).
	IPv4Aliases AliasMode `json:"ipv4_aliases,omitempty"`
	// DefaultLocation is the latitude and longitude given to city records
	// that have none (Logstash drops city results without a location).
	// Nil means 0,0.
	DefaultLocation *[2]float64 `json:"default_location,omitempty"`
}

// Stats describe a finished build.
type Stats struct {
	Path         string
	DatabaseType string
	Profile      Profile
	Sources      []SourceStats
	Nodes        int
	Size         int64
	BuildEpoch   int64
	// IPv4Aliases tells whether the file has the IPv4 aliases; AliasMode
	// is the mode asked for and AliasCollisions the first row of the
	// sources in each alias network (why AliasAuto wrote none).
	IPv4Aliases     bool
	AliasMode       AliasMode
	AliasCollisions []AliasCollision
	// Findings are what typed readers refuse in the file (its database
	// type, private networks Perl's reader will not look up).
	Findings []mmdb.Finding
	// DefaultedLocations counts city records given the default location.
	DefaultedLocations int
	Warnings           []string
	Elapsed            time.Duration
}

// SourceStats count what one source contributed.
type SourceStats struct {
	Path     string
	Rows     int // rows, lines or base networks read
	Networks int // networks inserted
}

// BuildEpochFromEnv returns SOURCE_DATE_EPOCH if set, else the current time.
func BuildEpochFromEnv() (int64, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 {
			return 0, errors.New("SOURCE_DATE_EPOCH must be a positive integer")
		}
		return v, nil
	}
	return time.Now().Unix(), nil
}
