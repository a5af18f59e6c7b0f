package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/internal/rowjson"
	"github.com/lutkit/lutkit/reader"
)

func newGetCommand() *cobra.Command {
	var sep string
	cmd := &cobra.Command{
		Use:   "get TABLE KEY...",
		Short: "Look keys up and print each row as a JSON object",
		Long: `Get prints one JSON object per key found, one per line, with the column
names as keys and the values as strings, in column order: the same bytes
as lut export --format jsonl, enrichd's lookup API and memcached listener,
and enrichd's events write for the row. A key that is
not found is reported on stderr; the exit status is then 1.

For a table with a composite key (compiled with --key a,b), give each key
as its parts joined by --sep (default ","). For a case-folded table, keys
are folded the same way before the lookup.

For an .mmdb file, give IP addresses; each answer carries the matched
network and the record.`,
		Example: `  lut get customers.lut 42 1999999
  lut get services.lut --sep / "web01/443"
  lut get assets.mmdb 10.20.3.4 2001:db8::1`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isMMDBFile(args[0]) {
				return runGetMMDB(cmd, args[0], args[1:])
			}
			return runGet(cmd, args[0], args[1:], sep)
		},
	}
	cmd.Flags().StringVar(&sep, "sep", ",", "separator of the parts of a composite key")
	return cmd
}

func runGet(cmd *cobra.Command, path string, keys []string, sep string) error {
	t, err := reader.Open(path)
	if err != nil {
		return err
	}
	defer t.Close()
	out := bufio.NewWriter(cmd.OutOrStdout())
	// The rows found before a malformed key are written too.
	missing, err := writeRows(cmd, out, t, path, keys, sep)
	if ferr := out.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("get: writing the rows: %w", ferr)
	}
	if err != nil {
		return err
	}
	if missing > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// writeRows writes the row of each key to out as a JSON line, and says on
// stderr which keys are missing; it returns how many are.
func writeRows(cmd *cobra.Command, out *bufio.Writer, t *reader.Table, path string, keys []string, sep string) (int, error) {
	var row reader.Row
	enc := rowjson.NewEncoder(t.Columns(), t.ColumnTypes())
	var line []byte
	missing := 0
	composite := len(t.KeyColumns()) > 1
	for _, k := range keys {
		key := []byte(k)
		if composite {
			parts := strings.Split(k, sep)
			if len(parts) != len(t.KeyColumns()) {
				return missing, &exitError{code: 2, msg: fmt.Sprintf("get: key %q has %d parts, the table's key has %d (joined by %q)", k, len(parts), len(t.KeyColumns()), sep)}
			}
			bs := make([][]byte, len(parts))
			for i, p := range parts {
				bs[i] = []byte(p)
			}
			key = reader.JoinKey(nil, bs...)
		}
		if !t.Get(key, &row) {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: key %q not found in %s\n", k, path)
			missing++
			continue
		}
		line = append(enc.Append(line[:0], row.View()), '\n')
		out.Write(line) // its error is Flush's
	}
	return missing, nil
}
