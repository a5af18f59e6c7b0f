package iptable

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/config"
)

// Validate checks the options, reporting every problem at once, each
// naming its option by its tables.yaml key. Compile runs it.
func (o *Options) Validate() error { return config.Validate(o.Check) }

// Check reports the problems of the options in s, each with the key at
// fault, so that the caller places it (a tables.yaml position, a flag).
func (o *Options) Check(s config.Scope) {
	if o.Profile != ProfileAuto {
		if _, err := ParseProfile(string(o.Profile)); err != nil {
			s.Check("profile", err)
		}
	}
	switch o.IPVersion {
	case 0, 4, 6:
	default:
		s.Errorf("ip_version", "must be 4 or 6, not %d", o.IPVersion)
	}
	switch o.RecordSize {
	case 0, 24, 28, 32:
	default:
		s.Errorf("record_size", "must be 24, 28 or 32, not %d", o.RecordSize)
	}
	if strings.Contains(o.CustomKey, ".") {
		s.Errorf("custom_key", "%q must not contain a dot", o.CustomKey)
	}
	if o.BuildEpoch < 0 {
		s.Errorf("build_epoch", "must be positive, not %d", o.BuildEpoch)
	}
	switch o.IPv4Aliases {
	case AliasAuto, AliasOff:
	case AliasOn:
		if o.IPVersion == 4 {
			s.Errorf("ipv4_aliases", "IPv4 aliases exist only in IPv6 files (ip version 6)")
		}
	default:
		s.Errorf("ipv4_aliases", "unknown IPv4 alias mode %d", o.IPv4Aliases)
	}
}

// withDefaults returns the options with every default applied: the one
// place defaults are set. The build epoch comes from SOURCE_DATE_EPOCH or
// the clock.
func (o Options) withDefaults() (Options, error) {
	if o.Profile == ProfileAuto {
		o.Profile = ProfileCustom
	}
	o.Profile = Profile(strings.ToLower(string(o.Profile)))
	if o.DatabaseType == "" {
		switch o.Profile {
		case ProfileCity:
			o.DatabaseType = "Lutkit-City"
		case ProfileASN:
			o.DatabaseType = "Lutkit-ASN"
		default:
			o.DatabaseType = "Lutkit-Custom"
		}
	}
	if o.Description == "" {
		o.Description = "lutkit " + string(o.Profile) + " database"
	}
	if len(o.Languages) == 0 {
		o.Languages = []string{"en"}
	}
	if o.IPVersion == 0 {
		o.IPVersion = 6
	}
	if o.RecordSize == 0 {
		o.RecordSize = 28
	}
	if o.CustomKey == "" {
		o.CustomKey = "x_internal"
	}
	if o.BuildEpoch == 0 {
		epoch, err := BuildEpochFromEnv()
		if err != nil {
			return o, err
		}
		o.BuildEpoch = epoch
	}
	return o, nil
}

// Validate checks the source, reporting every problem at once, each
// naming its option by its tables.yaml key. Compile runs it.
func (src *Source) Validate() error { return config.Validate(src.Check) }

// Check reports the problems of the source in s, each with the key at
// fault, so that the caller places it (a tables.yaml position, a flag).
func (src *Source) Check(s config.Scope) {
	if src.Path == "" {
		s.Errorf("path", "missing")
	}
	switch src.Kind {
	case CSVRanges:
		if src.StartColumn == "" || src.EndColumn == "" {
			s.Errorf("", "a ranges source needs start_column and end_column")
		}
	case CSVNetworks:
		if src.NetworkColumn == "" {
			s.Errorf("network_column", "missing: a networks source needs the CIDR column")
		}
	case List, Base:
	default:
		s.Errorf("type", "unknown source type %d", src.Kind)
	}
	switch src.Family {
	case 0, 4, 6:
	default:
		s.Errorf("family", "must be 4 or 6, not %d", src.Family)
	}
	if src.Delimiter != 0 {
		s.Check("delimiter", src.Delimiter.Validate())
	}
	switch src.Quote {
	case "", source.QuoteCSV, source.QuoteNone:
	default:
		s.Errorf("quote", "unknown quoting %q (want csv or none)", src.Quote)
	}
}

// GuessKind returns the kind a source's columns or file name suggest:
// ranges with a start or end column, networks with a network column, an
// MMDB base layer for a .mmdb file, and a list otherwise. tables.yaml
// uses it for a source without a type.
func (src *Source) GuessKind() SourceKind {
	switch {
	case src.StartColumn != "" || src.EndColumn != "":
		return CSVRanges
	case src.NetworkColumn != "":
		return CSVNetworks
	case strings.HasSuffix(strings.ToLower(src.Path), ".mmdb"):
		return Base
	}
	return List
}

var kindNames = [...]string{CSVRanges: "ranges", CSVNetworks: "networks", List: "list", Base: "mmdb"}

func (k SourceKind) String() string {
	if int(k) >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// MarshalText implements encoding.TextMarshaler: ranges, networks, list
// or mmdb.
func (k SourceKind) MarshalText() ([]byte, error) {
	if int(k) < 0 || int(k) >= len(kindNames) {
		return nil, fmt.Errorf("unknown source kind %d", int(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *SourceKind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if strings.EqualFold(string(b), n) {
			*k = SourceKind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown source type %q (want ranges, networks, list or mmdb)", b)
}

// UnmarshalText implements encoding.TextUnmarshaler (see ParseProfile).
func (p *Profile) UnmarshalText(b []byte) error { return parseInto(p, ParseProfile, b) }

// MarshalText implements encoding.TextMarshaler: auto, on or off.
func (m AliasMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (see ParseAliasMode).
func (m *AliasMode) UnmarshalText(b []byte) error { return parseInto(m, ParseAliasMode, b) }

// MarshalText implements encoding.TextMarshaler: replace, top or deep.
func (m Merge) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (see ParseMerge).
func (m *Merge) UnmarshalText(b []byte) error { return parseInto(m, ParseMerge, b) }

// String returns the field as ParseField reads it: PATH[:TYPE]=COLUMN.
func (f Field) String() string { return specText(f.Path, f.Type, f.Column) }

// MarshalText implements encoding.TextMarshaler (see String).
func (f Field) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (see ParseField).
func (f *Field) UnmarshalText(b []byte) error { return parseInto(f, ParseField, b) }

// String returns the constant as ParseConstant reads it:
// PATH[:TYPE]=VALUE.
func (c Constant) String() string { return specText(c.Path, c.Type, c.Value) }

// MarshalText implements encoding.TextMarshaler (see String).
func (c Constant) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (see ParseConstant).
func (c *Constant) UnmarshalText(b []byte) error { return parseInto(c, ParseConstant, b) }

// specText writes PATH[:TYPE]=RHS, the text of fields and constants.
func specText(path string, t Type, rhs string) string {
	if t == TypeAuto {
		return path + "=" + rhs
	}
	return path + ":" + string(t) + "=" + rhs
}

// parseInto stores in dst what parse reads from b.
func parseInto[T any](dst *T, parse func(string) (T, error), b []byte) error {
	v, err := parse(string(b))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
