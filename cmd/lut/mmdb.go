package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lutkit/lutkit/compile/iptable"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// addMMDBCompileFlags registers the flags of "lut compile" that build MMDB
// files from IP sources.
func addMMDBCompileFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool("mmdb", false, "write an MMDB file (implied by an --out ending in .mmdb)")
	f.String("range", "", "MMDB: START,END columns holding inclusive IP ranges (addresses or integers)")
	f.String("network", "", "MMDB: column holding a CIDR network or a single address")
	f.Int("range-family", 0, "MMDB: read integer range bounds as IPv4 (4) or IPv6 (6); 0 guesses")
	f.String("base", "", "MMDB: existing .mmdb copied as the bottom layer")
	f.StringArray("ioc", nil, "MMDB: [NAME=]FILE list of addresses/CIDRs/ranges layered on top (repeatable)")
	f.StringArray("ioc-set", nil, "MMDB: PATH[:TYPE]=VALUE field of IoC records (default threat.ioc=true, threat.list=NAME)")
	f.String("ioc-merge", "deep", "MMDB: how IoC records combine with data below: replace, top or deep")
	f.String("profile", "custom", "MMDB: record profile: city, asn or custom")
	f.String("database-type", "", "MMDB: metadata database_type (default Lutkit-City, Lutkit-ASN or Lutkit-Custom)")
	f.String("description", "", "MMDB: metadata description (English)")
	f.StringArray("field", nil, "MMDB: PATH[:TYPE]=COLUMN record field from a column (repeatable; default: every column by name)")
	f.StringArray("set", nil, "MMDB: PATH[:TYPE]=VALUE constant field of the CSV sources' records (repeatable)")
	f.String("merge", "replace", "MMDB: how CSV/MMDB sources combine with earlier layers: replace, top or deep (comma list: one per source)")
	f.Int("ip-version", 6, "MMDB: 6 (IPv4 and IPv6) or 4")
	f.Int("record-size", 28, "MMDB: search tree record size: 24, 28 or 32")
	f.String("custom-key", "x_internal", "MMDB: top-level key for fields outside the city/asn schema")
	f.String("default-location", "", "MMDB: LAT,LON for city records without a location (default 0,0)")
	f.Int64("build-epoch", 0, "MMDB: build time in Unix seconds (default SOURCE_DATE_EPOCH, else now)")
}

// isMMDBOutput reports whether this compile writes an MMDB.
func isMMDBOutput(cmd *cobra.Command, out string) bool {
	if v, err := cmd.Flags().GetBool("mmdb"); err == nil && v {
		return true
	}
	return strings.EqualFold(filepath.Ext(out), ".mmdb")
}

// flagStrings reads a flag registered by someone else as a string or a
// string slice.
func flagStrings(fs *pflag.FlagSet, name string) []string {
	fl := fs.Lookup(name)
	if fl == nil || !fl.Changed {
		return nil
	}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	var out []string
	for _, s := range strings.Split(fl.Value.String(), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

// mmdbSources turns the flags and positional files into layered sources:
// --base, then the positional files in order (.mmdb files are copied as
// layers), then the --ioc lists.
func mmdbSources(cmd *cobra.Command, args []string, opts *iptable.Options) ([]iptable.Source, error) {
	fs := cmd.Flags()
	get := func(name string) string { v, _ := fs.GetString(name); return v }
	arr := func(name string) []string { v, _ := fs.GetStringArray(name); return v }
	var fields []iptable.Field
	for _, s := range arr("field") {
		f, err := iptable.ParseField(s)
		if err != nil {
			return nil, usageErr("--field: %v", err)
		}
		fields = append(fields, f)
	}
	var consts []iptable.Constant
	for _, s := range arr("set") {
		c, err := iptable.ParseConstant(s)
		if err != nil {
			return nil, usageErr("--set: %v", err)
		}
		consts = append(consts, c)
	}
	var merges []iptable.Merge
	for _, s := range strings.Split(get("merge"), ",") {
		m, err := iptable.ParseMerge(strings.TrimSpace(s))
		if err != nil {
			return nil, usageErr("--merge: %v", err)
		}
		merges = append(merges, m)
	}
	if len(merges) > 1 && len(merges) != len(args) {
		return nil, usageErr("--merge lists %d modes for %d sources", len(merges), len(args))
	}
	family, _ := fs.GetInt("range-family")
	var delim source.Delimiter
	if d := flagStrings(fs, "delimiter"); len(d) > 0 {
		var err error
		if delim, err = source.ParseDelimiter(d[0]); err != nil {
			return nil, usageErr("--%v", err)
		}
	}
	columns := flagStrings(fs, "columns")
	var srcs []iptable.Source
	if b := get("base"); b != "" {
		srcs = append(srcs, iptable.Source{Kind: iptable.Base, Path: b})
	}
	for i, path := range args {
		m := merges[0]
		if len(merges) > 1 {
			m = merges[i]
		}
		src := iptable.Source{Path: path, Merge: m, Columns: columns, Delimiter: delim,
			Fields: fields, Set: consts, Family: family}
		switch {
		case isMMDBFile(path):
			src = iptable.Source{Kind: iptable.Base, Path: path, Merge: m}
		case get("range") != "":
			s, e, ok := strings.Cut(get("range"), ",")
			if !ok || s == "" || e == "" {
				return nil, usageErr("--range wants START,END column names")
			}
			src.Kind, src.StartColumn, src.EndColumn = iptable.CSVRanges, strings.TrimSpace(s), strings.TrimSpace(e)
		case get("network") != "" || len(flagStrings(fs, "key")) > 0:
			col := get("network")
			if col == "" {
				col = flagStrings(fs, "key")[0]
			}
			src.Kind, src.NetworkColumn = iptable.CSVNetworks, col
		default:
			return nil, usageErr("%s: say which columns hold the addresses: --range START,END or --network COLUMN", path)
		}
		srcs = append(srcs, src)
	}
	iocMerge, err := iptable.ParseMerge(get("ioc-merge"))
	if err != nil {
		return nil, usageErr("--ioc-merge: %v", err)
	}
	var iocConsts []iptable.Constant
	for _, s := range arr("ioc-set") {
		c, err := iptable.ParseConstant(s)
		if err != nil {
			return nil, usageErr("--ioc-set: %v", err)
		}
		iocConsts = append(iocConsts, c)
	}
	for _, spec := range arr("ioc") {
		name, path, ok := strings.Cut(spec, "=")
		if !ok {
			path = spec
			name = strings.TrimSuffix(filepath.Base(path), ".gz")
			name = strings.TrimSuffix(name, filepath.Ext(name))
		}
		set := iocConsts
		if len(set) == 0 {
			set = []iptable.Constant{
				{Path: "threat.ioc", Type: iptable.TypeBoolean, Value: "true"},
				{Path: "threat.list", Type: iptable.TypeString, Value: name},
			}
		}
		srcs = append(srcs, iptable.Source{Kind: iptable.List, Path: path, Set: set, Merge: iocMerge, Family: family})
	}
	if len(srcs) == 0 {
		return nil, usageErr("no sources: give CSV/MMDB files, --base or --ioc")
	}
	return srcs, nil
}

// runCompileMMDB runs "lut compile" for MMDB output.
func runCompileMMDB(cmd *cobra.Command, args []string, out string) error {
	fs := cmd.Flags()
	get := func(name string) string { v, _ := fs.GetString(name); return v }
	profile, err := iptable.ParseProfile(get("profile"))
	if err != nil {
		return usageErr("--profile: %v", err)
	}
	opts := iptable.Options{
		Profile:      profile,
		DatabaseType: get("database-type"),
		Description:  get("description"),
		CustomKey:    get("custom-key"),
	}
	opts.IPVersion, _ = fs.GetInt("ip-version")
	opts.RecordSize, _ = fs.GetInt("record-size")
	opts.BuildEpoch, _ = fs.GetInt64("build-epoch")
	if dl := get("default-location"); dl != "" {
		la, lo, ok := strings.Cut(dl, ",")
		lat, err1 := strconv.ParseFloat(strings.TrimSpace(la), 64)
		lon, err2 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		if !ok || err1 != nil || err2 != nil {
			return usageErr("--default-location wants LAT,LON")
		}
		opts.DefaultLocation = &[2]float64{lat, lon}
	}
	srcs, err := mmdbSources(cmd, args, &opts)
	if err != nil {
		return err
	}
	st, err := iptable.Compile(out, opts, srcs)
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	for _, warn := range st.Warnings {
		fmt.Fprintln(w, "lut: warning:", warn)
	}
	if st.DefaultedLocations > 0 {
		fmt.Fprintf(w, "lut: note: %d city records had no location and got the default\n", st.DefaultedLocations)
	}
	for _, s := range st.Sources {
		fmt.Fprintf(w, "lut: %s: %d rows, %d networks\n", s.Path, s.Rows, s.Networks)
	}
	fmt.Fprintf(w, "lut: wrote %s (%s, %s profile, %d nodes, %d bytes) in %s\n",
		st.Path, st.DatabaseType, st.Profile, st.Nodes, st.Size, st.Elapsed.Round(time.Millisecond))
	return nil
}

// isMMDBFile reports whether the file at path is an MMDB: its last 128 KiB
// hold the metadata marker.
func isMMDBFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	off := max(st.Size()-mmdb.MetadataMaxSize, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return mmdb.HasMetadataMarker(buf)
}

// runGetMMDB prints one JSON object per found address.
func runGetMMDB(cmd *cobra.Command, path string, addrs []string) error {
	r, err := mmdb.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetEscapeHTML(false)
	code := 0
	for _, s := range addrs {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: %q is not an IP address\n", s)
			code = 2
			continue
		}
		m, rec, err := r.LookupRecord(ip)
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: %s: %v\n", s, err)
			code = 2
			continue
		}
		if !m.Found() {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: %s: not found\n", s)
			code = max(code, 1)
			continue
		}
		if err := enc.Encode(struct {
			IP      string `json:"ip"`
			Network string `json:"network"`
			Record  any    `json:"record"`
		}{ip.String(), m.Prefix().String(), rec}); err != nil {
			return err
		}
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// runInspectMMDB prints the metadata.
func runInspectMMDB(cmd *cobra.Command, path string, asJSON bool) error {
	r, err := mmdb.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	m := r.Metadata()
	size := len(r.Bytes())
	built := time.Unix(int64(m.BuildEpoch), 0).UTC()
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"path": path, "format": "mmdb", "database_type": m.DatabaseType,
			"ip_version": m.IPVersion, "record_size": m.RecordSize, "node_count": m.NodeCount,
			"build_epoch": m.BuildEpoch, "build_time": built.Format(time.RFC3339),
			"languages": m.Languages, "description": m.Description, "size": size,
			"binary_format": fmt.Sprintf("%d.%d", m.BinaryFormatMajorVersion, m.BinaryFormatMinorVersion),
		})
	}
	fmt.Fprintf(out, "path:           %s\n", path)
	fmt.Fprintf(out, "format:         MaxMind DB %d.%d\n", m.BinaryFormatMajorVersion, m.BinaryFormatMinorVersion)
	fmt.Fprintf(out, "database type:  %s\n", m.DatabaseType)
	fmt.Fprintf(out, "ip version:     %d\n", m.IPVersion)
	fmt.Fprintf(out, "record size:    %d bits\n", m.RecordSize)
	fmt.Fprintf(out, "node count:     %d\n", m.NodeCount)
	fmt.Fprintf(out, "build time:     %s (epoch %d)\n", built.Format(time.RFC3339), m.BuildEpoch)
	fmt.Fprintf(out, "languages:      %s\n", strings.Join(m.Languages, ", "))
	langs := make([]string, 0, len(m.Description))
	for l := range m.Description {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		fmt.Fprintf(out, "description:    [%s] %s\n", l, m.Description[l])
	}
	fmt.Fprintf(out, "size:           %d bytes\n", size)
	return nil
}

// runVerifyMMDB runs the full verification and prints "ok" or the failure.
func runVerifyMMDB(cmd *cobra.Command, path string) error {
	if _, err := iptable.Check(path, iptable.ProfileAuto); err != nil {
		fmt.Fprintln(cmd.OutOrStdout(), "FAIL:", err)
		return &exitError{code: 1, msg: err.Error()}
	}
	fmt.Fprintln(cmd.OutOrStdout(), "ok")
	return nil
}
