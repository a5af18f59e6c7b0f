package iptable

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// Check reopens an MMDB file and runs the checks every build ends with:
// the full maxminddb-golang Verify, the metadata types and the
// Elasticsearch tail scan (mmdb.Reader.Verify), no pointers in the
// metadata, no "database_type" or metadata marker bytes in the data
// section, and for the city and asn profiles a strict check of every
// distinct record against the types the Java reader expects. ProfileAuto
// picks the profile from the database type. It returns the node count.
func Check(path string, p Profile) (nodes int, err error) {
	r, err := mmdb.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	meta := r.Metadata()
	nodes = int(meta.NodeCount)
	if err := r.Verify(); err != nil {
		return nodes, fmt.Errorf("%s: %w", path, err)
	}
	if ptr, err := r.MetadataHasPointers(); err != nil || ptr {
		return nodes, fmt.Errorf("%s: metadata uses pointers (err=%v)", path, err)
	}
	data := r.DataSection()
	if bytes.Contains(data, []byte("database_type")) {
		return nodes, fmt.Errorf("%s: the data section contains the text database_type, which confuses Elasticsearch's tail scan", path)
	}
	if mmdb.HasMetadataMarker(data) {
		return nodes, fmt.Errorf("%s: the data section contains the metadata marker", path)
	}
	if p == ProfileAuto {
		p = ProfileFor(meta.DatabaseType)
	}
	seen := map[uintptr]bool{}
	for res := range r.DB().Networks() {
		if err := res.Err(); err != nil {
			return nodes, fmt.Errorf("%s: %w", path, err)
		}
		off := res.Offset()
		if seen[off] {
			continue
		}
		seen[off] = true
		t, err := r.RecordAt(off)
		if err != nil {
			return nodes, fmt.Errorf("%s: record of %s: %w", path, res.Prefix(), err)
		}
		if err := checkRecord(p, t); err != nil {
			return nodes, fmt.Errorf("%s: record of %s (%s profile): %w", path, res.Prefix(), p, err)
		}
	}
	return nodes, nil
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
