package main

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

func newDiffCommand() *cobra.Command {
	var (
		limit    int
		exitCode bool
	)
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "List the keys added, removed and changed between two tables",
		Long: `Diff compares two .lut tables by key and prints how many keys were added,
removed and changed (any value differs). With --limit N it also lists up
to N keys of each kind, and for changed keys the columns that differ.
Columns present in only one table are reported once. The exit status is 0
whether or not the tables differ; with --exit-code (as git diff) it is 1
when they differ (a key added, removed or changed, a column added or
removed, the key or the match kind changed) and 0 when they do not. A
damaged table (a section that does not match its checksum, a row its key
does not find) is refused: the error names the file and the damage, and
the exit status is 2.

Rows of range and time-bounded tables, whose keys repeat, are named by
their identity instead of their key: [from, to] for a range table, the
key and its validity [valid_from, valid_to) for a time-bounded one, both
for a range table bounded in time (bounds compared as numbers and times,
whatever their spelling). Rows that share an identity are paired in
source order.`,
		Example: `  lut diff customers-old.lut customers.lut
  lut diff --limit 20 customers-old.lut customers.lut
  lut diff --exit-code customers-old.lut customers.lut >/dev/null || echo changed`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range args {
				if err := notMMDB("diff", p); err != nil {
					return err
				}
			}
			differ, err := runDiff(cmd, args[0], args[1], limit)
			if err == nil && differ && exitCode {
				return &exitError{code: 1}
			}
			return err
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "list up to N keys of each kind")
	cmd.Flags().BoolVar(&exitCode, "exit-code", false, "exit with status 1 when the tables differ, 0 when they do not")
	return cmd
}

// runDiff prints the differences and reports whether there are any.
func runDiff(cmd *cobra.Command, oldPath, newPath string, limit int) (differ bool, err error) {
	a, err := openLUT(oldPath)
	if err != nil {
		return false, err
	}
	defer a.Close()
	b, err := openLUT(newPath)
	if err != nil {
		return false, err
	}
	defer b.Close()
	out := cmd.OutOrStdout()
	// Columns are compared by name.
	var common [][2]int
	for i, c := range a.Columns() {
		if j := b.ColumnIndex(c); j >= 0 {
			common = append(common, [2]int{i, j})
		} else {
			fmt.Fprintf(out, "column removed: %q\n", c)
			differ = true
		}
	}
	for _, c := range b.Columns() {
		if a.ColumnIndex(c) < 0 {
			fmt.Fprintf(out, "column added: %q\n", c)
			differ = true
		}
	}
	if a.MatchKind() != b.MatchKind() {
		fmt.Fprintf(out, "match changed: %s -> %s\n", a.MatchKind(), b.MatchKind())
		differ = true
	}
	if !slices.Equal(keyNames(a), keyNames(b)) || a.FoldCase() != b.FoldCase() {
		fmt.Fprintf(out, "key changed: %q (fold case %v) -> %q (fold case %v)\n", keyNames(a), a.FoldCase(), keyNames(b), b.FoldCase())
		differ = true
	}
	var d diffResult
	if identityOf(a) != nil || identityOf(b) != nil {
		d, err = diffIdentities(a, b, common, limit)
	} else {
		d, err = diffKeys(a, b, common, limit)
	}
	if err != nil {
		return differ, err
	}
	fmt.Fprintf(out, "%d added, %d removed, %d changed (%d rows -> %d rows)\n", d.added, d.removed, d.changed, a.Rows(), b.Rows())
	for _, k := range d.addedKeys {
		fmt.Fprintf(out, "+ %s\n", k)
	}
	for _, k := range d.removedKeys {
		fmt.Fprintf(out, "- %s\n", k)
	}
	for _, l := range d.changedLines {
		fmt.Fprintf(out, "~ %s\n", l)
	}
	return differ || d.added+d.removed+d.changed > 0, nil
}

// diffResult counts the rows added, removed and changed, and lists up to
// the limit of each, as printed (a key quoted, or a row's identity).
type diffResult struct {
	added, removed, changed              int
	addedKeys, removedKeys, changedLines []string
}

// diffKeys compares tables whose rows have one key each: by key.
func diffKeys(a, b *reader.Table, common [][2]int, limit int) (diffResult, error) {
	var d diffResult
	err := records(a, func(v reader.View) bool {
		w, ok := rowOf(b, v.Key())
		if !ok {
			d.removed++
			if len(d.removedKeys) < limit {
				d.removedKeys = append(d.removedKeys, fmt.Sprintf("%q", v.Key()))
			}
			return true
		}
		if cols := changedColumns(a, common, v, w); len(cols) > 0 {
			d.changed++
			if len(d.changedLines) < limit {
				d.changedLines = append(d.changedLines, fmt.Sprintf("%q: %s", v.Key(), joinComma(cols)))
			}
		}
		return true
	})
	if err != nil {
		return d, err
	}
	err = records(b, func(v reader.View) bool {
		if _, ok := rowOf(a, v.Key()); !ok {
			d.added++
			if len(d.addedKeys) < limit {
				d.addedKeys = append(d.addedKeys, fmt.Sprintf("%q", v.Key()))
			}
		}
		return true
	})
	return d, err
}

// records is t.Records with its error, a damaged table's, naming the
// file: diff stops there rather than count the damage as differences.
func records(t *reader.Table, fn func(reader.View) bool) error {
	if err := t.Records(fn); err != nil {
		return fmt.Errorf("%s: %w", t.Path(), err)
	}
	return nil
}

// changedColumns returns "column: old -> new" for each common column
// whose value differs between row v of a and row w of the other table.
func changedColumns(a *reader.Table, common [][2]int, v, w reader.View) []string {
	var cols []string
	for _, c := range common {
		if !bytes.Equal(v.Col(c[0]), w.Col(c[1])) {
			cols = append(cols, fmt.Sprintf("%s: %q -> %q", a.Columns()[c[0]], v.Col(c[0]), w.Col(c[1])))
		}
	}
	return cols
}

// rowOf returns t's row of a stored key of the other table: in an exact
// table its lookup (which folds it for a table with --fold-case), in one
// of another match kind the row of that key itself, not its best match.
func rowOf(t *reader.Table, key []byte) (reader.View, bool) {
	if t.MatchKind() == format.MatchExact {
		return t.Lookup(key)
	}
	return t.LookupStored(key)
}

func keyNames(t *reader.Table) []string {
	var names []string
	for _, k := range t.KeyColumns() {
		names = append(names, t.Columns()[k])
	}
	return names
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}
