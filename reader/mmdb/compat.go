package mmdb

import (
	"errors"
	"fmt"
	"net/netip"
)

// Finding is something a particular reader refuses, or reads wrongly, in a
// file that is a valid MaxMind DB.
type Finding struct {
	// Reader names the reader affected (and the versions, where they
	// differ).
	Reader string
	// Problem says what goes wrong there.
	Problem string
	// Layout is true for findings about how the file is laid out (metadata
	// types, where database_type sits), which a writer can always avoid;
	// false for findings about what the file holds (its database type, its
	// networks), which depend on the readers it is meant for.
	Layout bool
}

func (f Finding) String() string { return f.Reader + ": " + f.Problem }

// Findings checks a file that passed Verify against the rules of the
// readers that are stricter than the format: the metadata types
// libmaxminddb requires, Elasticsearch's database_type scans, the database
// type rules of the typed GeoIP2 readers (see TypeFindings) and the private
// networks Perl's GeoIP2::Database::Reader refuses to look up.
func (r *Reader) Findings() ([]Finding, error) {
	if r.db == nil {
		return nil, errClosed
	}
	out := r.LayoutFindings()
	dt := r.meta.DatabaseType
	m := ModelOf(dt)
	out = append(out, TypeFindings(dt, m)...)
	if m != "" {
		f, err := r.privateFindings()
		if err != nil {
			return out, err
		}
		out = append(out, f...)
	}
	return out, nil
}

// LayoutFindings returns the findings about the file's layout.
func (r *Reader) LayoutFindings() []Finding {
	var out []Finding
	if err := libmaxminddbMetadata(section(r.buf[r.metaOff:])); err != nil {
		out = append(out, Finding{Reader: readerLibmaxminddb, Problem: err.Error(), Layout: true})
	}
	want := r.meta.DatabaseType
	for _, legacy := range []bool{false, true} {
		reader := readerES
		if legacy {
			reader = readerESLegacy
		}
		got, err := ElasticsearchDatabaseType(r.buf, legacy)
		switch {
		case errors.Is(err, errTooSmallForLegacy):
			// The size of what the file holds, not its layout: only
			// more networks or data make it larger.
			out = append(out, Finding{Reader: reader, Problem: err.Error()})
		case err != nil:
			out = append(out, Finding{Reader: reader, Problem: "cannot read database_type: " + err.Error(), Layout: true})
		case got != want:
			out = append(out, Finding{Reader: reader, Problem: fmt.Sprintf("reads database_type %q, the metadata says %q", got, want), Layout: true})
		}
	}
	return out
}

const (
	readerLibmaxminddb = "libmaxminddb (mmdblookup, nginx's geoip2 module)"
	readerES           = "Elasticsearch ingest-geoip"
	readerESLegacy     = "Elasticsearch ingest-geoip releases without PR #112888 (Sept 2024)"
)

// metadataKinds are the metadata keys libmaxminddb reads, with the exact
// type it requires (a uint32 record_size, say, is refused there); a
// missing key is refused too.
var metadataKinds = []struct {
	key  string
	kind Kind
}{
	{"binary_format_major_version", KindUint16},
	{"binary_format_minor_version", KindUint16},
	{"build_epoch", KindUint64},
	{"database_type", KindString},
	{"description", KindMap},
	{"ip_version", KindUint16},
	{"languages", KindArray},
	{"node_count", KindUint32},
	{"record_size", KindUint16},
}

// libmaxminddbMetadata applies libmaxminddb's metadata rules
// (read_metadata in maxminddb.c): exact types, a non-zero build_epoch and
// node_count, language and description values that are strings.
func libmaxminddbMetadata(s section) error {
	t, _, err := s.typedBudget(0, 0, &budget{})
	if err != nil {
		return err
	}
	for _, mk := range metadataKinds {
		v, ok := t.Get(mk.key)
		if !ok {
			return fmt.Errorf("refuses the file: the metadata has no %s", mk.key)
		}
		if v.Kind != mk.kind {
			return fmt.Errorf("refuses the file: metadata %s is a %s, not a %s", mk.key, v.Kind, mk.kind)
		}
	}
	get := func(k string) uint64 { v, _ := t.Get(k); return v.Uint }
	switch {
	case get("build_epoch") == 0:
		return errors.New("refuses the file: build_epoch is 0")
	case get("node_count") == 0:
		return errors.New("refuses the file: node_count is 0")
	}
	langs, _ := t.Get("languages")
	for _, l := range langs.Array {
		if l.Kind != KindString {
			return fmt.Errorf("refuses the file: a language is a %s", l.Kind)
		}
	}
	desc, _ := t.Get("description")
	for _, e := range desc.Map {
		if e.Value.Kind != KindString {
			return fmt.Errorf("refuses the file: description %q is a %s", e.Key, e.Value.Kind)
		}
	}
	return nil
}

var databaseTypeKey = []byte("database_type")

// errTooSmallForLegacy: Elasticsearch releases before PR #112888 read
// the last 512 bytes of a file larger than that, and fail on the others.
var errTooSmallForLegacy = errors.New("cannot read a file of 512 bytes or less")

// ElasticsearchDatabaseType reads database_type the way Elasticsearch does
// before it opens a file, without the MMDB reader (MMDBUtil.getDatabaseType
// in its ingest-geoip module): it takes the last 2048 bytes of the file
// (zero-padded when the file is smaller), finds the first occurrence of the
// bytes "database_type" and expects an inline UTF-8 string right after it,
// of at most 284 bytes. legacy applies the rules of releases before PR
// #112888: the last 512 bytes of a file larger than 512 bytes, and a
// length read from the control byte alone, so that types of 29 bytes or
// more come out wrong.
func ElasticsearchDatabaseType(b []byte, legacy bool) (string, error) {
	window := 2048
	if legacy {
		window = 512
		if len(b) <= window {
			return "", fmt.Errorf("%w (this one has %d)", errTooSmallForLegacy, len(b))
		}
	}
	tail := make([]byte, window)
	copy(tail, b[max(len(b)-window, 0):])
	// The marker search of MMDBUtil, byte for byte: a mismatch restarts
	// the match without looking at the mismatching byte again.
	off, matched := -1, 0
	for i, c := range tail {
		if c == databaseTypeKey[matched] {
			matched++
		} else {
			matched = 0
		}
		if matched == len(databaseTypeKey) {
			off = i + 1
			break
		}
	}
	if off < 0 || off >= len(tail) {
		return "", errors.New("no database_type key in the file's tail (a pointer in the metadata, or metadata too far from the end)")
	}
	c := tail[off]
	if Kind(c>>5) != KindString {
		return "", fmt.Errorf("the database_type value is not an inline string (control byte %#02x: a %s)", c, Kind(c>>5))
	}
	size := int(c & 0x1f)
	if !legacy {
		switch {
		case size == 29 && off+1 < len(tail):
			size = 29 + int(tail[off+1])
			off++
		case size >= 29:
			return "", errors.New("database_type too long (285 bytes or more)")
		}
	}
	if off+1+size > len(tail) {
		return "", errors.New("database_type value runs past the end of the file")
	}
	return string(tail[off+1 : off+1+size]), nil
}

// PerlPrivateNetworks are the networks whose addresses Perl's
// GeoIP2::Database::Reader refuses to look up ("is not a public IP
// address") before it reads the file: Data::Validate::IP's is_private_ip
// (RFC 1918 and fc00::/7). IPv4-mapped (::ffff:a.b.c.d) and 6to4 forms of
// those addresses are not refused.
var PerlPrivateNetworks = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

const readerPerl = "Perl GeoIP2::Database::Reader"

// privateFindings reports networks of the file that Perl's reader cannot
// reach. The file must have passed Verify: iterating a corrupt tree can
// take for ever.
func (r *Reader) privateFindings() ([]Finding, error) {
	var out []Finding
	for _, p := range PerlPrivateNetworks {
		if r.meta.IPVersion == 4 && !p.Addr().Is4() {
			continue
		}
		n := 0
		var first netip.Prefix
		for res := range r.db.NetworksWithin(p) {
			if err := res.Err(); err != nil {
				return out, err
			}
			if n == 0 {
				first = res.Prefix()
			}
			n++
		}
		if n > 0 {
			out = append(out, Finding{Reader: readerPerl, Problem: fmt.Sprintf(
				"refuses to look up addresses in %s (not public), where this file has %d networks (first %s)", p, n, first)})
		}
	}
	return out, nil
}
