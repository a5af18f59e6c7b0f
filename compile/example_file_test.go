package compile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader"
)

// File compiles a CSV file as "lut compile --key id --columns id,email
// --on-duplicate last --skip-bad-rows" does; Stats counts what became of
// its rows, and every skipped row's error says where it is.
func ExampleFile() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	csv := "id,email,plan\n42,ann@example.com,pro\n7,bob@example.com\n42,ann@example.org,pro\n9,cy@example.com,free\n"
	in, out := filepath.Join(dir, "customers.csv"), filepath.Join(dir, "customers.lut")
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	src, err := source.Open(in, source.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	opts := compile.Options{Key: []string{"id"}, Columns: []string{"id", "email"}, OnDuplicate: compile.DuplicateLast, SkipBadRows: true}
	st, err := compile.File(src, out, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("rows %d (read %d, duplicates %d, skipped %d)\n", st.Rows, st.SourceRows, st.Duplicates, st.SkippedRows)
	var re *source.RowError
	for _, err := range st.BadRows {
		if errors.As(err, &re) {
			fmt.Printf("line %d: %v\n", re.Line, re.Err)
		}
	}
	t, err := reader.Open(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	fmt.Println("columns", t.Columns())
	// Output:
	// rows 2 (read 4, duplicates 1, skipped 1)
	// line 3: expected 3 fields, found 2
	// columns [id email]
}
