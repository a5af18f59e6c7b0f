package iptable

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// Report is what Audit found in an MMDB file.
type Report struct {
	DatabaseType string
	Nodes        int
	// Findings are what particular readers refuse in the file.
	Findings []mmdb.Finding
}

// javaReaders are the readers that decode records into GeoIP2-java models
// with strict types.
const javaReaders = "GeoIP2-java (Logstash geoip filter, Elasticsearch ingest-geoip)"

// Audit verifies an MMDB file and reports what known readers refuse in it.
// It fails only when the file is not a valid MaxMind DB (maxminddb-golang's
// full verification); everything else is a finding: the layout rules of
// libmaxminddb and Elasticsearch, the database type rules of the typed
// readers, private networks Perl's reader refuses to look up, and for city
// and ASN files the record types the Java reader decodes and (city) the
// location Logstash needs.
func Audit(path string) (*Report, error) {
	r, err := mmdb.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	meta := r.Metadata()
	rep := &Report{DatabaseType: meta.DatabaseType, Nodes: int(meta.NodeCount)}
	if err := r.Verify(); err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	if rep.Findings, err = r.Findings(); err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	var p Profile
	switch mmdb.ModelOf(meta.DatabaseType) {
	case mmdb.ModelCity:
		p = ProfileCity
	case mmdb.ModelASN:
		p = ProfileASN
	default:
		return rep, nil
	}
	var typeErr error
	noLocation := 0
	err = eachRecord(r, func(prefix string, t mmdb.Typed) {
		err := checkRecord(p, t)
		switch {
		case err == nil:
		case errors.Is(err, errNoLocation):
			noLocation++
		case typeErr == nil:
			typeErr = fmt.Errorf("record of %s: %w", prefix, err)
		}
	})
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	if typeErr != nil {
		rep.Findings = append(rep.Findings, mmdb.Finding{Reader: javaReaders, Problem: typeErr.Error() + " (the lookup fails)"})
	}
	if noLocation > 0 {
		rep.Findings = append(rep.Findings, mmdb.Finding{Reader: "Logstash geoip filter", Problem: fmt.Sprintf(
			"%d city records have no location.latitude/longitude: Logstash adds no geo fields for them and tags the event _geoip_lookup_failure", noLocation)})
	}
	return rep, nil
}

// eachRecord calls f once per distinct record of a verified file.
func eachRecord(r *mmdb.Reader, f func(prefix string, t mmdb.Typed)) error {
	seen := map[uintptr]bool{}
	for res := range r.DB().Networks() {
		if err := res.Err(); err != nil {
			return err
		}
		off := res.Offset()
		if seen[off] {
			continue
		}
		seen[off] = true
		t, err := r.RecordAt(off)
		if err != nil {
			return fmt.Errorf("record of %s: %w", res.Prefix(), err)
		}
		f(res.Prefix().String(), t)
	}
	return nil
}

// Check is the check every build ends with, stricter than Audit: the file
// must be valid, have no layout finding (libmaxminddb's metadata types,
// Elasticsearch's database_type scans), no pointers in the metadata, no
// "database_type" or metadata marker bytes in the data section, and for
// the city and asn profiles every record must have the types the Java
// reader expects (and city records a location). ProfileAuto picks the
// profile from the database type. It returns the node count and the
// findings that depend on the readers the file is meant for (database
// type, private networks), which the caller reports.
func Check(path string, p Profile) (nodes int, warnings []mmdb.Finding, err error) {
	r, err := mmdb.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	meta := r.Metadata()
	nodes = int(meta.NodeCount)
	if err := r.Verify(); err != nil {
		return nodes, nil, fmt.Errorf("%s: %w", path, err)
	}
	findings, err := r.Findings()
	if err != nil {
		return nodes, nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, f := range findings {
		if f.Layout {
			return nodes, nil, fmt.Errorf("%s: %s", path, f)
		}
		warnings = append(warnings, f)
	}
	ptr, err := r.MetadataHasPointers()
	if err != nil {
		return nodes, nil, fmt.Errorf("%s: metadata: %w", path, err)
	}
	if ptr {
		return nodes, nil, fmt.Errorf("%s: metadata uses pointers", path)
	}
	data := r.DataSection()
	if bytes.Contains(data, []byte("database_type")) {
		return nodes, nil, fmt.Errorf("%s: the data section contains the text database_type, which confuses Elasticsearch's tail scan", path)
	}
	if mmdb.HasMetadataMarker(data) {
		return nodes, nil, fmt.Errorf("%s: the data section contains the metadata marker", path)
	}
	if p == ProfileAuto {
		p = ProfileFor(meta.DatabaseType)
	}
	var recErr error
	err = eachRecord(r, func(prefix string, t mmdb.Typed) {
		if recErr == nil {
			if cerr := checkRecord(p, t); cerr != nil {
				recErr = fmt.Errorf("record of %s (%s profile): %w", prefix, p, cerr)
			}
		}
	})
	if err == nil {
		err = recErr
	}
	if err != nil {
		return nodes, nil, fmt.Errorf("%s: %w", path, err)
	}
	return nodes, warnings, nil
}

// ProfileFor guesses the profile of a database type the way readers do:
// a type ending in -City is a city file, one ending in -ASN an ASN file.
func ProfileFor(databaseType string) Profile {
	switch {
	case strings.HasSuffix(databaseType, "-City"):
		return ProfileCity
	case strings.HasSuffix(databaseType, "-ASN"):
		return ProfileASN
	}
	return ProfileCustom
}
