package iptable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// schema describes one level of a GeoIP2 record with the exact MMDB types
// the Java reader (com.maxmind.db 3.x) accepts; a different type makes the
// whole lookup fail in Logstash and Elasticsearch.
type schema struct {
	kind   mmdb.Kind
	fields map[string]*schema // map with known keys
	any    *schema            // map with free keys (names: lang -> string)
	elem   *schema            // array element
}

func leaf(k mmdb.Kind) *schema { return &schema{kind: k} }

var (
	sString = leaf(mmdb.KindString)
	sU16    = leaf(mmdb.KindUint16)
	sU32    = leaf(mmdb.KindUint32)
	sDouble = leaf(mmdb.KindDouble)
	sBool   = leaf(mmdb.KindBool)
	sNames  = &schema{kind: mmdb.KindMap, any: sString}
)

func record(fields map[string]*schema) *schema {
	return &schema{kind: mmdb.KindMap, fields: fields}
}

func countrySchema(extra map[string]*schema) *schema {
	f := map[string]*schema{
		"geoname_id": sU32, "iso_code": sString, "names": sNames,
		"is_in_european_union": sBool, "confidence": sU16,
	}
	for k, v := range extra {
		f[k] = v
	}
	return record(f)
}

var citySchema = record(map[string]*schema{
	"city":      record(map[string]*schema{"geoname_id": sU32, "names": sNames, "confidence": sU16}),
	"continent": record(map[string]*schema{"code": sString, "geoname_id": sU32, "names": sNames}),
	"country":   countrySchema(nil),
	"location": record(map[string]*schema{
		"latitude": sDouble, "longitude": sDouble, "time_zone": sString,
		"accuracy_radius": sU16, "metro_code": sU16,
		"average_income": sU32, "population_density": sU32,
	}),
	"postal":              record(map[string]*schema{"code": sString, "confidence": sU16}),
	"registered_country":  countrySchema(nil),
	"represented_country": countrySchema(map[string]*schema{"type": sString}),
	"subdivisions": {kind: mmdb.KindArray, elem: record(map[string]*schema{
		"geoname_id": sU32, "iso_code": sString, "names": sNames, "confidence": sU16,
	})},
	"traits": record(map[string]*schema{
		"autonomous_system_number": sU32, "autonomous_system_organization": sString,
		"connection_type": sString, "domain": sString, "isp": sString,
		"organization": sString, "user_type": sString,
		"mobile_country_code": sString, "mobile_network_code": sString,
		"is_anonymous": sBool, "is_anonymous_proxy": sBool, "is_anonymous_vpn": sBool,
		"is_anycast": sBool, "is_hosting_provider": sBool, "is_legitimate_proxy": sBool,
		"is_public_proxy": sBool, "is_residential_proxy": sBool,
		"is_satellite_provider": sBool, "is_tor_exit_node": sBool,
	}),
	"maxmind": record(map[string]*schema{"queries_remaining": sU32}),
})

var asnSchema = record(map[string]*schema{
	"autonomous_system_number":       sU32,
	"autonomous_system_organization": sString,
})

// asnReserved are top-level keys the Java ASN model declares with a type
// no source value can have (network is decoded as a Network object).
var asnReserved = map[string]bool{"network": true, "ip_address": true}

// anySchema merges the known paths of all profiles, to type fields of
// custom-profile files named like GeoIP2 fields.
var anySchema = func() *schema {
	f := map[string]*schema{}
	for k, v := range citySchema.fields {
		f[k] = v
	}
	for k, v := range asnSchema.fields {
		f[k] = v
	}
	return record(f)
}()

func profileSchema(p Profile) *schema {
	switch p {
	case ProfileCity:
		return citySchema
	case ProfileASN:
		return asnSchema
	}
	return nil
}

// lookup returns the schema at path, or nil.
func (s *schema) lookup(path []seg) *schema {
	for _, p := range path {
		switch {
		case s == nil:
			return nil
		case s.kind == mmdb.KindArray:
			if p.index < 0 {
				return nil
			}
			s = s.elem
		case s.fields != nil:
			s = s.fields[p.key]
		case s.any != nil:
			s = s.any
		default:
			return nil
		}
	}
	return s
}

// resolvePath places a mapped path in the profile (custom keys go under
// customKey) and settles its type.
func resolvePath(o *Options, path string, t Type) ([]seg, Type, error) {
	segs, err := splitPath(path)
	if err != nil {
		return nil, "", err
	}
	switch o.Profile {
	case ProfileCustom:
		if s := anySchema.lookup(segs); t == TypeAuto && s != nil && s.kind != mmdb.KindMap && s.kind != mmdb.KindArray {
			t = typeOf(s.kind)
		}
		return segs, t, nil
	}
	root := profileSchema(o.Profile)
	top := segs[0].key
	if top == o.CustomKey {
		if len(segs) == 1 {
			return nil, "", fmt.Errorf("%s: map a field below %s, not %s itself", path, o.CustomKey, o.CustomKey)
		}
		return segs, t, nil
	}
	if o.Profile == ProfileASN && asnReserved[top] {
		return nil, "", fmt.Errorf("%s: the ASN reader decodes %q itself; use %s.%s", path, top, o.CustomKey, top)
	}
	if _, known := root.fields[top]; !known {
		return append([]seg{{key: o.CustomKey, index: -1}}, segs...), t, nil
	}
	s := root.lookup(segs)
	if s == nil || s.kind == mmdb.KindMap || s.kind == mmdb.KindArray {
		return nil, "", fmt.Errorf("%s is not a field of the %s profile (custom data goes under %s.)", path, o.Profile, o.CustomKey)
	}
	want := typeOf(s.kind)
	if t != TypeAuto && t != want {
		return nil, "", fmt.Errorf("%s must be %s in the %s profile (the Java reader expects that type), not %s", path, want, o.Profile, t)
	}
	return segs, want, nil
}

// checkDatabaseType refuses database types that break a profile for
// every reader of it (Elasticsearch's scan length and suffixes, the
// substrings other models claim). Which typed readers refuse a type that
// passes is reported by Check's findings (mmdb.TypeFindings).
func checkDatabaseType(o *Options) (warnings []string, err error) {
	dt := o.DatabaseType
	if len(dt) > 28 {
		return nil, fmt.Errorf("database type %q is %d bytes; Elasticsearch reads at most 28", dt, len(dt))
	}
	for _, c := range []byte(dt) {
		if c < 0x21 || c > 0x7e {
			return nil, fmt.Errorf("database type %q: use printable ASCII without spaces", dt)
		}
	}
	if strings.Contains(dt, "database_type") {
		return nil, fmt.Errorf("database type %q must not contain \"database_type\"", dt)
	}
	if strings.HasPrefix(strings.ToLower(dt), "ipinfo") && o.Profile != ProfileCustom {
		return nil, fmt.Errorf("database type %q: Elasticsearch treats types starting with ipinfo as IPinfo files", dt)
	}
	if strings.HasPrefix(dt, "GeoIP") {
		warnings = append(warnings, fmt.Sprintf("database type %q: names starting with GeoIP are reserved for MaxMind", dt))
	}
	switch o.Profile {
	case ProfileCity:
		if !strings.HasSuffix(dt, "-City") {
			return nil, fmt.Errorf("database type %q: a city profile type must end in -City (Elasticsearch matches the suffix, Logstash the substring City)", dt)
		}
		if strings.Contains(dt, "Enterprise") || strings.Contains(dt, "GeoLite2-ASN") {
			return nil, fmt.Errorf("database type %q: must not contain Enterprise or GeoLite2-ASN", dt)
		}
	case ProfileASN:
		if !strings.HasSuffix(dt, "-ASN") {
			return nil, fmt.Errorf("database type %q: an asn profile type must end in -ASN (Elasticsearch matches the suffix)", dt)
		}
	}
	return warnings, nil
}

// locationFixer gives city records without latitude/longitude the default
// location. It copies, never modifies, the value it is given.
type locationFixer struct {
	lat, lon  float64
	defaulted int
}

func (f *locationFixer) fix(v mmdbtype.DataType) mmdbtype.DataType {
	m, ok := v.(mmdbtype.Map)
	if !ok {
		return v
	}
	loc, _ := m["location"].(mmdbtype.Map)
	_, hasLat := loc["latitude"]
	_, hasLon := loc["longitude"]
	if hasLat && hasLon {
		return v
	}
	nm := make(mmdbtype.Map, len(m)+1)
	for k, e := range m {
		nm[k] = e
	}
	nl := make(mmdbtype.Map, len(loc)+2)
	for k, e := range loc {
		nl[k] = e
	}
	if !hasLat {
		nl["latitude"] = mmdbtype.Float64(f.lat)
	}
	if !hasLon {
		nl["longitude"] = mmdbtype.Float64(f.lon)
	}
	nm["location"] = nl
	f.defaulted++
	return nm
}

var errNoLocation = errors.New("record has no location.latitude/longitude (Logstash drops such results)")

// checkRecord checks a stored record against the profile: exact types of
// known keys (unknown keys are skipped, as the Java reader does), names
// maps holding "en", and for city records a location.
func checkRecord(p Profile, t mmdb.Typed) error {
	if t.Kind != mmdb.KindMap {
		return fmt.Errorf("record is a %s, not a map", t.Kind)
	}
	s := profileSchema(p)
	if s == nil {
		return nil
	}
	if err := checkTyped(t, s, ""); err != nil {
		return err
	}
	switch p {
	case ProfileCity:
		loc, _ := t.Get("location")
		_, lat := loc.Get("latitude")
		_, lon := loc.Get("longitude")
		if !lat || !lon {
			return errNoLocation
		}
	case ProfileASN:
		for k := range asnReserved {
			if _, ok := t.Get(k); ok {
				return fmt.Errorf("record has a top-level %q, which the Java ASN model cannot decode", k)
			}
		}
	}
	return nil
}

func checkTyped(t mmdb.Typed, s *schema, path string) error {
	if t.Kind != s.kind {
		return fmt.Errorf("%s is a %s; the Java reader expects %s", strings.TrimPrefix(path, "."), t.Kind, s.kind)
	}
	switch {
	case s.kind == mmdb.KindArray:
		for i, e := range t.Array {
			if err := checkTyped(e, s.elem, fmt.Sprintf("%s.%d", path, i)); err != nil {
				return err
			}
		}
	case s.any != nil:
		for _, e := range t.Map {
			if err := checkTyped(e.Value, s.any, path+"."+e.Key); err != nil {
				return err
			}
		}
		if s == sNames && len(t.Map) > 0 {
			if _, ok := t.Get("en"); !ok {
				return fmt.Errorf("%s has no \"en\" name (Logstash and Elasticsearch read only en)", strings.TrimPrefix(path, "."))
			}
		}
	case s.fields != nil:
		for _, e := range t.Map {
			if fs, ok := s.fields[e.Key]; ok {
				if err := checkTyped(e.Value, fs, path+"."+e.Key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
