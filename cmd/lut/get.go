package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/reader"
)

func newGetCommand() *cobra.Command {
	var sep string
	cmd := &cobra.Command{
		Use:   "get TABLE KEY...",
		Short: "Look keys up and print each row as a JSON object",
		Long: `Get prints one JSON object per key found, one per line, with the column
names as keys and the values as strings, in column order. A key that is
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
	defer out.Flush()
	var row reader.Row
	missing := 0
	composite := len(t.KeyColumns()) > 1
	for _, k := range keys {
		key := []byte(k)
		if composite {
			parts := strings.Split(k, sep)
			if len(parts) != len(t.KeyColumns()) {
				return &exitError{code: 2, msg: fmt.Sprintf("get: key %q has %d parts, the table's key has %d (joined by %q)", k, len(parts), len(t.KeyColumns()), sep)}
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
		writeRowJSON(out, t.Columns(), row.View())
		out.WriteByte('\n')
	}
	if missing > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// writeRowJSON writes a row as a JSON object of strings, in column order.
func writeRowJSON(w io.Writer, cols []string, v reader.View) {
	b := []byte{'{'}
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, c)
		b = append(b, ':')
		b = appendJSONString(b, string(v.Col(i)))
	}
	b = append(b, '}')
	w.Write(b)
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // strings always marshal
	return append(b, enc...)
}
