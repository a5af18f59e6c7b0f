package compile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader"
)

// TestSourceRowsCountsBadRows: every row read is a source row, whoever
// finds it bad (the CSV reader: a short row; the compiler: a composite key
// part holding the separator), so that source rows are always the table's
// rows, the duplicates dropped and the bad rows skipped. The table's META
// records the same counts.
func TestSourceRowsCountsBadRows(t *testing.T) {
	csv := "tenant,user,role\nacme,ann,admin\nacme,bob\nacme,a\x1fn,viewer\nglobex,ann,viewer\nacme,ann,owner\n"
	src, err := source.NewCSVReader(strings.NewReader(csv), "users.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users.lut")
	opts := Options{Key: []string{"tenant", "user"}, OnDuplicate: DuplicateLast, SkipBadRows: true, SourceName: "users.csv"}
	st, err := File(src, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.SourceRows != 5 || st.Rows != 2 || st.Duplicates != 1 || st.SkippedRows != 2 || len(st.BadRows) != 2 {
		t.Fatalf("stats: source rows %d, rows %d, duplicates %d, skipped %d, bad rows %v; want 5, 2, 1, 2",
			st.SourceRows, st.Rows, st.Duplicates, st.SkippedRows, st.BadRows)
	}
	// The composite key's bad part is placed at its column.
	if got, want := st.BadRows[1].Error(), `users.csv:4:6: key column "user" contains the byte 0x1f, which separates composite key parts`; got != want {
		t.Errorf("bad key part: %q, want %q", got, want)
	}
	tb, err := reader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if m := tb.Meta(); m.SourceRows != 5 || m.SkippedRows != 2 || m.Duplicates != 1 {
		t.Fatalf("META: source rows %d, skipped %d, duplicates %d; want 5, 2, 1", m.SourceRows, m.SkippedRows, m.Duplicates)
	}
}
