package main

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/rowjson"
	"github.com/lutkit/lutkit/reader"
)

func newGetCommand() *cobra.Command {
	var (
		sep, at    string
		maxMatches int
	)
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

For a range table (compiled with --match range), give integers (IPv4
addresses for a table whose from,to are addresses): the row whose
inclusive from,to holds each is printed. For a time-bounded table
(compiled with --valid-from/--valid-to), the row valid at --at (RFC 3339
or epoch seconds; default: now) is printed; valid_to is exclusive, so a
lease ending at 12:00 and the next starting at 12:00 give the new one at
12:00. A range table compiled with --valid-from/--valid-to too takes
integers and --at. With --max-matches N above 1, each key prints one
JSON array of up to N rows that match (the longest suffix first; for
tables compiled with --overlap: narrowest first, or in source order), []
for none.

For an .mmdb file, give IP addresses; each answer is an object of the
address ("ip"), the matched network and the record, as enrichd's lookup
API writes records (a NaN or infinite float is null). An address not
found, an IPv6 address in a database of IPv4 networks only included, is
reported on stderr and makes the exit status 1; an argument that is not
an IP address, or whose lookup meets damage in the file, makes it 2. --sep, --at and --max-matches apply to .lut
tables only: given for an .mmdb file, they are a usage error.`,
		Example: `  lut get customers.lut 42 1999999
  lut get services.lut --sep / "web01/443"
  lut get ports.lut 443 8080
  lut get leases.lut --at 2026-03-01T10:00:00Z 10.1.2.3
  lut get ports.lut --max-matches 5 8443
  lut get assets.mmdb 10.20.3.4 2001:db8::1`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isMMDBFile(args[0]) {
				if err := notApplicable(cmd, "get", []string{"sep", "at", "max-matches"}, ".lut tables", args[0]+" is a MaxMind DB"); err != nil {
					return err
				}
				return runGetMMDB(cmd, args[0], args[1:])
			}
			q := query{sep: sep, maxMatches: maxMatches, at: time.Now().Unix()}
			if q.maxMatches < 1 {
				return &exitError{code: 2, msg: "get: --max-matches must be at least 1"}
			}
			if at != "" {
				sec, open, err := format.ParseTime([]byte(at))
				if err != nil || open {
					return &exitError{code: 2, msg: fmt.Sprintf("get: --at %q is neither an RFC 3339 time nor epoch seconds", at)}
				}
				q.at = sec
			}
			return runGet(cmd, args[0], args[1:], q)
		},
	}
	cmd.Flags().StringVar(&sep, "sep", ",", "separator of the parts of a composite key")
	cmd.Flags().StringVar(&at, "at", "", "time of the lookup in a time-bounded table: RFC 3339 or epoch seconds (default: now)")
	cmd.Flags().IntVar(&maxMatches, "max-matches", 1, "print up to N matching rows per key, as a JSON array")
	return cmd
}

// query is how lut get looks keys up.
type query struct {
	sep        string // separator of composite key parts
	at         int64  // time of the lookup, Unix seconds
	maxMatches int
}

func runGet(cmd *cobra.Command, path string, keys []string, q query) error {
	t, err := openLUT(path)
	if err != nil {
		return err
	}
	defer t.Close()
	out := bufio.NewWriter(cmd.OutOrStdout())
	// The rows found before a malformed key are written too.
	missing, err := writeRows(cmd, out, t, path, keys, q)
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
func writeRows(cmd *cobra.Command, out *bufio.Writer, t *reader.Table, path string, keys []string, q query) (int, error) {
	var row reader.Row
	enc := rowjson.NewEncoder(t.Columns(), t.ColumnTypes())
	var line []byte
	missing := 0
	sep := q.sep
	composite := len(t.KeyColumns()) > 1 && t.MatchKind() != format.MatchRange
	var views []reader.View
	if q.maxMatches > 1 {
		views = make([]reader.View, q.maxMatches)
	}
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
		if views != nil {
			n := t.MatchAt(key, q.at, views)
			line = append(line[:0], '[')
			for i, v := range views[:n] {
				if i > 0 {
					line = append(line, ',')
				}
				line = enc.Append(line, v)
			}
			line = append(line, "]\n"...)
			out.Write(line) // its error is Flush's
			if n == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "lut: key %q not found in %s\n", k, path)
				missing++
			}
			continue
		}
		if !t.GetAt(key, q.at, &row) {
			fmt.Fprintf(cmd.ErrOrStderr(), "lut: key %q not found in %s\n", k, path)
			missing++
			continue
		}
		line = append(enc.Append(line[:0], row.View()), '\n')
		out.Write(line) // its error is Flush's
	}
	return missing, nil
}
