package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/compile/iptable"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/internal/jsonstr"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// isMMDBFile reports whether the file at path is an MMDB: its last 128 KiB
// hold the metadata marker.
func isMMDBFile(path string) bool {
	f, st, err := fsutil.OpenRegular(path) // a named pipe must not block
	if err != nil {
		return false
	}
	defer f.Close()
	off := max(st.Size()-mmdb.MetadataMaxSize, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return mmdb.HasMetadataMarker(buf)
}

// openLUT opens the .lut table at path for the commands that read one. A
// file named .mmdb that is neither (no .lut magic, no MMDB metadata
// marker) is named as the MaxMind DB it was meant to be.
func openLUT(path string) (*reader.Table, error) {
	t, err := reader.Open(path)
	if errors.Is(err, format.ErrNotTable) && strings.EqualFold(filepath.Ext(path), ".mmdb") {
		return nil, fmt.Errorf("%s: not a MaxMind DB (no metadata marker in its last %d KiB), nor a .lut table", path, mmdb.MetadataMaxSize>>10)
	}
	return t, err
}

// runGetMMDB prints one JSON object per found address: its "ip", the
// matched "network" and the "record", written as enrichd's lookup API
// writes records (maps in stored order, non-finite floats as null).
func runGetMMDB(cmd *cobra.Command, path string, addrs []string) error {
	r, err := mmdb.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	out := bufio.NewWriter(cmd.OutOrStdout())
	code := 0
	var rec, line []byte
	for _, s := range addrs {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: %q is not an IP address\n", s)
			code = 2
			continue
		}
		var m mmdb.Match
		rec, m, err = r.AppendRecordJSON(rec[:0], ip)
		if errors.Is(err, mmdb.ErrCorrupt) {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: %s: %s: %v (the file is damaged: lut verify %s checks all of it)\n", path, s, err, path)
			code = 2
			continue
		}
		if errors.Is(err, mmdb.ErrIPv6InIPv4) {
			// Like a key a table does not hold: not found.
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: %s not found in %s: the database holds IPv4 networks only (ip_version 4)\n", s, path)
			code = max(code, 1)
			continue
		}
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
		line = append(line[:0], `{"ip":`...)
		line = jsonstr.AppendStringS(line, ip.String())
		line = append(line, `,"network":"`...)
		line = m.Prefix().AppendTo(line)
		line = append(line, `","record":`...)
		line = append(append(line, rec...), "}\n"...)
		out.Write(line) // its error is Flush's
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("get: writing the records: %w", err)
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
	aliases := []string{}
	for _, p := range r.IPv4Aliases() {
		aliases = append(aliases, mmdb.AliasString(p))
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"path": path, "format": "mmdb", "database_type": m.DatabaseType,
			"ip_version": m.IPVersion, "record_size": m.RecordSize, "node_count": m.NodeCount,
			"build_epoch": m.BuildEpoch, "build_time": built.Format(time.RFC3339),
			"languages": m.Languages, "description": m.Description, "size": size,
			"ipv4_aliases":  aliases,
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
	fmt.Fprintf(out, "ipv4 aliases:   %s\n", describeAliases(m.IPVersion, aliases))
	fmt.Fprintf(out, "size:           %d bytes\n", size)
	return nil
}

// describeAliases says which IPv6 networks lead to the IPv4 data.
func describeAliases(ipVersion uint, aliases []string) string {
	switch {
	case ipVersion != 6:
		return "none (IPv4 file)"
	case len(aliases) == 0:
		return "none: ::ffff:a.b.c.d, 2001::/32 and 2002::/16 addresses are looked up as IPv6 addresses"
	}
	return strings.Join(aliases, ", ") + " lead to the IPv4 data"
}

// runVerifyMMDB verifies an MMDB file: it fails if the file is not a valid
// MaxMind DB, and prints what known readers refuse in it as warnings, or
// as failures with strict.
func runVerifyMMDB(cmd *cobra.Command, path string, strict bool) error {
	rep, err := iptable.Audit(path)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), path+": "))
	}
	label := "warning"
	if strict {
		label = "error"
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s: %s\n", path, label, f)
	}
	if strict && len(rep.Findings) > 0 {
		return fmt.Errorf("%d compatibility findings (--strict)", len(rep.Findings))
	}
	note := ""
	if n := len(rep.Findings); n > 0 {
		note = fmt.Sprintf(", %d compatibility warnings", n)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (valid MaxMind DB, %s, %d nodes%s)\n", path, rep.DatabaseType, rep.Nodes, note)
	return nil
}

// notMMDB refuses an .mmdb given to command, which reads .lut tables
// only, as a usage error that says what reads it.
func notMMDB(command, path string) error {
	if isMMDBFile(path) {
		return &exitError{code: 2, msg: fmt.Sprintf("%s: %s is a MaxMind DB (.mmdb); %s reads .lut tables (lut get, inspect and verify read .mmdb files)", command, path, command)}
	}
	return nil
}
