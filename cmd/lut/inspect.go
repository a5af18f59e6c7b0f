package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

func newInspectCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect TABLE",
		Short: "Print a table's header, schema, sections and build information",
		Long: `Inspect prints what a .lut table or an .mmdb file is, from its header
and metadata.

For a .lut table: its format version and size, the rows, the columns, the
key and how it matches (as the lut compile flags that give it), the
column types, when and by what it was built, the source rows read,
skipped and dropped as duplicates, the hash, and each section's offset,
length and checksum.

For an .mmdb file: the MaxMind DB format version, the database type, IP
version, record size, node count, build time, languages and
descriptions, the IPv6 networks that lead to the IPv4 data (ipv4
aliases), and the size.

--json prints the same as one JSON object. The exit status is 2 when the
file cannot be read or is neither a .lut table nor a MaxMind DB.`,
		Example: `  lut inspect customers.lut
  lut inspect --json customers.lut | jq .rows
  lut inspect assets.mmdb
  lut inspect --json assets.mmdb | jq .ipv4_aliases`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isMMDBFile(args[0]) {
				return runInspectMMDB(cmd, args[0], asJSON)
			}
			return runInspect(cmd, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type inspectSection struct {
	Name     string `json:"name"`
	Offset   uint64 `json:"offset"`
	Length   uint64 `json:"length"`
	Checksum string `json:"checksum"`
}

type inspectInfo struct {
	Path        string            `json:"path"`
	Format      string            `json:"format"`
	Version     string            `json:"version"`
	Rows        int               `json:"rows"`
	Columns     []string          `json:"columns"`
	Key         []string          `json:"key"`
	FoldCase    bool              `json:"fold_case"`
	Match       string            `json:"match"`
	ColumnTypes map[string]string `json:"column_types,omitempty"`
	Size        int64             `json:"size"`
	BuildTime   string            `json:"build_time,omitempty"`
	Seed        string            `json:"hash_seed"`
	HashBits    float64           `json:"hash_bits_per_key"`
	Index       string            `json:"index"`
	Meta        reader.Meta       `json:"meta"`
	Sections    []inspectSection  `json:"sections"`
	BytesPerRow float64           `json:"bytes_per_row"`
}

func runInspect(cmd *cobra.Command, path string, asJSON bool) error {
	t, err := openLUT(path)
	if err != nil {
		return err
	}
	defer t.Close()
	h := t.Header()
	info := inspectInfo{
		Path: path, Format: "lut", Version: fmt.Sprintf("%d.%d", h.Major, h.Minor),
		Rows: t.Rows(), Columns: t.Columns(), FoldCase: t.FoldCase(), Match: t.MatchKind().String(), Size: t.Size(),
		Seed: fmt.Sprintf("%#x", h.Seed), Meta: t.Meta(), Index: "perfect hash",
	}
	if h.Incompat&format.FeatureBucketedSlots != 0 {
		info.Index = "buckets"
	}
	var typeFlag []string
	for i, ct := range t.ColumnTypes() {
		if ct == format.TypeText {
			continue
		}
		if info.ColumnTypes == nil {
			info.ColumnTypes = map[string]string{}
		}
		info.ColumnTypes[t.Columns()[i]] = ct.String()
		typeFlag = append(typeFlag, t.Columns()[i]+"="+ct.String())
	}
	for _, k := range t.KeyColumns() {
		info.Key = append(info.Key, t.Columns()[k])
	}
	if bt := t.BuildTime(); !bt.IsZero() {
		info.BuildTime = bt.Format(time.RFC3339)
	}
	for _, s := range t.Sections() {
		info.Sections = append(info.Sections, inspectSection{format.SectionName(s.Kind), s.Off, s.Len, fmt.Sprintf("%016x", s.Checksum)})
		// The bits a key costs beyond its 64-bit slot: the perfect hash,
		// or the bucket table and the empty slots of a bucketed index.
		if s.Kind == format.SectionMPHF && t.Rows() > 0 {
			info.HashBits += float64(8*s.Len) / float64(t.Rows())
		}
		if s.Kind == format.SectionSlots && t.Rows() > 0 {
			info.HashBits += float64(8*s.Len)/float64(t.Rows()) - 64
		}
	}
	if t.Rows() > 0 {
		info.BytesPerRow = float64(t.Size()) / float64(t.Rows())
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "file:\t%s (.lut version %s, %s)\n", path, info.Version, humanBytes(info.Size))
	fmt.Fprintf(tw, "rows:\t%d (%.1f bytes per row)\n", info.Rows, info.BytesPerRow)
	fmt.Fprintf(tw, "columns:\t%d: %q\n", len(info.Columns), info.Columns)
	fmt.Fprintf(tw, "key:\t%q (fold case: %v)\n", info.Key, info.FoldCase)
	m := matchFlags(t)
	if m == "" {
		m = "--match exact"
	}
	fmt.Fprintf(tw, "match:\t%s\n", m)
	if len(typeFlag) > 0 {
		fmt.Fprintf(tw, "column types:\t--column-type %s\n", strings.Join(typeFlag, ","))
	}
	bt := info.BuildTime
	if bt == "" {
		bt = "not recorded (set SOURCE_DATE_EPOCH when compiling)"
	}
	fmt.Fprintf(tw, "built:\t%s by %s\n", bt, info.Meta.Writer)
	fmt.Fprintf(tw, "source:\t%d rows read, %d bad rows skipped, %d duplicates dropped (on duplicate: %s)\n",
		info.Meta.SourceRows, info.Meta.SkippedRows, info.Meta.Duplicates, info.Meta.OnDuplicate)
	fmt.Fprintf(tw, "hash:\txxh3-64, seed %s, %s %.2f bits/key\n", info.Seed, info.Index, info.HashBits)
	fmt.Fprintf(tw, "sections:\n")
	for _, s := range info.Sections {
		fmt.Fprintf(tw, "  %s\toffset %d\tlength %d\txxh3 %s\n", s.Name, s.Offset, s.Length, s.Checksum)
	}
	return tw.Flush()
}
