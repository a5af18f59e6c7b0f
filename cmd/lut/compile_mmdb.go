package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lutkit/lutkit/compile/iptable"
	"github.com/lutkit/lutkit/internal/config"
)

// mmdbFlags are the flags of "lut compile" that build MMDB files from IP
// sources. They decode into iptable.Options and a template
// iptable.Source for the CSV sources, which tables.yaml decodes into too;
// --columns, --delimiter and --key are shared with .lut output.
type mmdbFlags struct {
	mmdb     bool
	opts     iptable.Options
	csv      iptable.Source // Family, Fields and Set of the CSV sources
	merges   []iptable.Merge
	ranges   string // START,END
	network  string
	base     string
	iocs     []string
	iocSet   []iptable.Constant
	iocMerge iptable.Merge
}

// mmdbOptionFlags names the flag that sets each key of iptable.Options.
var mmdbOptionFlags = []string{"profile", "--profile", "database_type", "--database-type", "description", "--description",
	"ip_version", "--ip-version", "record_size", "--record-size", "custom_key", "--custom-key",
	"default_location", "--default-location", "build_epoch", "--build-epoch", "ipv4_aliases", "--ipv4-aliases"}

func newMMDBFlags() *mmdbFlags {
	return &mmdbFlags{
		opts:     iptable.Options{Profile: iptable.ProfileCustom, IPVersion: 6, RecordSize: 28, CustomKey: "x_internal"},
		merges:   []iptable.Merge{iptable.Replace},
		iocMerge: iptable.MergeDeep,
	}
}

func (m *mmdbFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&m.mmdb, "mmdb", false, "write an MMDB file (implied by an --out ending in .mmdb)")
	f.StringVar(&m.ranges, "range", "", "MMDB: START,END columns holding inclusive IP ranges (addresses or integers)")
	f.StringVar(&m.network, "network", "", "MMDB: column holding a CIDR network or a single address")
	f.IntVar(&m.csv.Family, "range-family", 0, "MMDB: read integer range bounds as IPv4 (4) or IPv6 (6); 0 guesses")
	f.StringVar(&m.base, "base", "", "MMDB: existing .mmdb copied as the bottom layer")
	f.StringArrayVar(&m.iocs, "ioc", nil, "MMDB: [NAME=]FILE list of addresses/CIDRs/ranges layered on top (repeatable)")
	f.Var(textSliceVar(&m.iocSet, ""), "ioc-set", "MMDB: PATH[:TYPE]=VALUE field of IoC records (default threat.ioc=true, threat.list=NAME)")
	f.Var(textVar(&m.iocMerge), "ioc-merge", "MMDB: how IoC records combine with data below: replace, top or deep")
	f.Var(textVar(&m.opts.Profile), "profile", "MMDB: record profile: city, asn or custom")
	f.StringVar(&m.opts.DatabaseType, "database-type", "", "MMDB: metadata database_type (default Lutkit-City, Lutkit-ASN or Lutkit-Custom)")
	f.StringVar(&m.opts.Description, "description", "", "MMDB: metadata description (English)")
	f.Var(textSliceVar(&m.csv.Fields, ""), "field", "MMDB: PATH[:TYPE]=COLUMN record field from a column (repeatable; default: every column by name)")
	f.Var(textSliceVar(&m.csv.Set, ""), "set", "MMDB: PATH[:TYPE]=VALUE constant field of the CSV sources' records (repeatable)")
	f.Var(textSliceVar(&m.merges, ","), "merge", "MMDB: how CSV/MMDB sources combine with earlier layers: replace, top or deep (comma list: one per source)")
	f.IntVar(&m.opts.IPVersion, "ip-version", m.opts.IPVersion, "MMDB: 6 (IPv4 and IPv6) or 4")
	f.IntVar(&m.opts.RecordSize, "record-size", m.opts.RecordSize, "MMDB: search tree record size: 24, 28 or 32")
	f.StringVar(&m.opts.CustomKey, "custom-key", m.opts.CustomKey, "MMDB: top-level key for fields outside the city/asn schema")
	f.Var(latLonValue{&m.opts.DefaultLocation}, "default-location", "MMDB: LAT,LON for city records without a location (default 0,0)")
	f.Int64Var(&m.opts.BuildEpoch, "build-epoch", 0, "MMDB: build time in Unix seconds (default SOURCE_DATE_EPOCH, else now)")
	f.Var(textVar(&m.opts.IPv4Aliases), "ipv4-aliases", "MMDB: alias ::ffff:0:0/96, 2001::/32 and 2002::/16 to the IPv4 data: auto (unless a source has data there), on (such data is an error) or off")
}

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

// mmdbSource is one source with the flags that set its keys.
type mmdbSource struct {
	src   iptable.Source
	flags []string
}

// sources lays the flags and positional files out as sources: --base,
// then the positional files in order (.mmdb files are copied as layers),
// then the --ioc lists.
func (m *mmdbFlags) sources(args []string, fl *compileFlags) ([]mmdbSource, error) {
	if len(m.merges) > 1 && len(m.merges) != len(args) {
		return nil, usageErr("--merge lists %d modes for %d sources", len(m.merges), len(args))
	}
	var srcs []mmdbSource
	if m.base != "" {
		srcs = append(srcs, mmdbSource{src: iptable.Source{Kind: iptable.Base, Path: m.base}})
	}
	csvFlags := []string{"columns", "--columns", "delimiter", "--delimiter", "quote", "--quote", "family", "--range-family",
		"fields", "--field", "set", "--set", "merge", "--merge"}
	for i, path := range args {
		merge := m.merges[0]
		if len(m.merges) > 1 {
			merge = m.merges[i]
		}
		if isMMDBFile(path) {
			srcs = append(srcs, mmdbSource{src: iptable.Source{Kind: iptable.Base, Path: path, Merge: merge}, flags: csvFlags})
			continue
		}
		src := m.csv
		src.Path, src.Merge, src.Columns, src.Delimiter, src.Quote = path, merge, fl.spec.Columns, fl.src.Delimiter, fl.src.Quote
		flags := slices.Clone(csvFlags)
		switch {
		case m.ranges != "":
			s, e, ok := strings.Cut(m.ranges, ",")
			if !ok || s == "" || e == "" {
				return nil, usageErr("--range wants START,END column names")
			}
			src.Kind, src.StartColumn, src.EndColumn = iptable.CSVRanges, strings.TrimSpace(s), strings.TrimSpace(e)
			flags = append(flags, "", "--range")
		case m.network != "" || len(fl.spec.Key) > 0:
			src.Kind, src.NetworkColumn = iptable.CSVNetworks, m.network
			if src.NetworkColumn == "" {
				src.NetworkColumn = fl.spec.Key[0]
			}
			flags = append(flags, "network_column", "--network")
		default:
			return nil, usageErr("%s: say which columns hold the addresses: --range START,END or --network COLUMN", path)
		}
		srcs = append(srcs, mmdbSource{src: src, flags: flags})
	}
	for _, spec := range m.iocs {
		name, path, ok := strings.Cut(spec, "=")
		if !ok {
			path = spec
			name = strings.TrimSuffix(filepath.Base(path), ".gz")
			name = strings.TrimSuffix(name, filepath.Ext(name))
		}
		set := m.iocSet
		if len(set) == 0 {
			set = []iptable.Constant{
				{Path: "threat.ioc", Type: iptable.TypeBoolean, Value: "true"},
				{Path: "threat.list", Type: iptable.TypeString, Value: name},
			}
		}
		srcs = append(srcs, mmdbSource{
			src:   iptable.Source{Kind: iptable.List, Path: path, Set: set, Merge: m.iocMerge, Family: m.csv.Family},
			flags: []string{"path", "--ioc", "set", "--ioc-set", "merge", "--ioc-merge", "family", "--range-family"},
		})
	}
	if len(srcs) == 0 {
		return nil, usageErr("no sources: give CSV/MMDB files, --base or --ioc")
	}
	return srcs, nil
}

// runCompileMMDB runs "lut compile" for MMDB output.
func runCompileMMDB(cmd *cobra.Command, args []string, fl *compileFlags, m *mmdbFlags) error {
	layers, err := m.sources(args, fl)
	if err != nil {
		return err
	}
	if err := checkFlags("compile", func(v *config.Validator) {
		m.opts.Check(v.In(flagsAt(mmdbOptionFlags...), ""))
		for _, l := range layers {
			l.src.Check(v.In(flagsAt(l.flags...), ""))
		}
	}); err != nil {
		return err
	}
	srcs := make([]iptable.Source, len(layers))
	for i, l := range layers {
		srcs[i] = l.src
	}
	st, err := iptable.Compile(fl.out, m.opts, srcs)
	if err != nil {
		return dataError(err)
	}
	w := cmd.ErrOrStderr()
	for _, warn := range st.Warnings {
		fmt.Fprintln(w, "lut: warning:", warn)
	}
	for _, f := range st.Findings {
		fmt.Fprintln(w, "lut: warning:", f)
	}
	if st.DefaultedLocations > 0 {
		fmt.Fprintf(w, "lut: note: %d city records had no location and got the default\n", st.DefaultedLocations)
	}
	for _, s := range st.Sources {
		fmt.Fprintf(w, "lut: %s: %d rows, %d networks\n", s.Path, s.Rows, s.Networks)
	}
	aliases := "IPv4 aliases"
	if !st.IPv4Aliases {
		aliases = "no IPv4 aliases"
	}
	fmt.Fprintf(w, "lut: wrote %s (%s, %s profile, %s, %d nodes, %d bytes) in %s\n",
		st.Path, st.DatabaseType, st.Profile, aliases, st.Nodes, st.Size, st.Elapsed.Round(time.Millisecond))
	return nil
}
