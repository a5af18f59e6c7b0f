package reader_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader"
)

// Open maps a table that "lut compile --key id" (here compile.File) wrote.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "customers.lut")
	customers := &source.Rows{Header: []string{"id", "email", "plan"}, Data: [][]string{
		{"42", "ann@example.com", "pro"}, {"7", "bob@example.com", "free"},
	}}
	if _, err := compile.File(customers, path, compile.Options{Key: []string{"id"}}); err != nil {
		fmt.Println(err)
		return
	}
	t, err := reader.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	fmt.Println(t.Rows(), "rows, columns", t.Columns())
	// Output:
	// 2 rows, columns [id email plan]
}

// Get copies the row into a Row, which one loop reuses without allocating;
// the copy stays valid whatever happens to the table afterwards.
func ExampleTable_Get() {
	customers := &source.Rows{Header: []string{"id", "email", "plan"}, Data: [][]string{
		{"42", "ann@example.com", "pro"}, {"7", "bob@example.com", "free"},
	}}
	t, done, err := compileExample(customers, compile.Options{Key: []string{"id"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	email := t.ColumnIndex("email")
	var row reader.Row
	for _, id := range []string{"42", "7", "8"} {
		if t.Get([]byte(id), &row) {
			fmt.Printf("%s: %s\n", id, row.Col(email))
		} else {
			fmt.Printf("%s: not found\n", id)
		}
	}
	// Output:
	// 42: ann@example.com
	// 7: bob@example.com
	// 8: not found
}

// Lookup copies nothing: the View aliases the mapping, so it is read
// between Acquire and Release. A Close meanwhile (a newer version of the
// table replacing this one) unmaps the table only at the Release.
func ExampleTable_Lookup() {
	customers := &source.Rows{Header: []string{"id", "email", "plan"}, Data: [][]string{
		{"42", "ann@example.com", "pro"}, {"7", "bob@example.com", "free"},
	}}
	t, done, err := compileExample(customers, compile.Options{Key: []string{"id"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	if !t.Acquire() {
		fmt.Println("table closed")
		return
	}
	v, ok := t.Lookup([]byte("42"))
	t.Close()
	if ok {
		fmt.Printf("%s %s\n", v.Col(1), v.Col(2))
	}
	if err := t.Release(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ann@example.com pro
}

// LookupBatch looks a batch of keys up at once, with their memory accesses
// overlapped: out[i] is key i's row, or the zero View (Len 0) when absent.
func ExampleTable_LookupBatch() {
	customers := &source.Rows{Header: []string{"id", "email", "plan"}, Data: [][]string{
		{"42", "ann@example.com", "pro"}, {"7", "bob@example.com", "free"},
	}}
	t, done, err := compileExample(customers, compile.Options{Key: []string{"id"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	keys := [][]byte{[]byte("7"), []byte("8"), []byte("42")}
	out := make([]reader.View, len(keys))
	if !t.Acquire() {
		fmt.Println("table closed")
		return
	}
	fmt.Println(t.LookupBatch(keys, out), "found")
	for i, v := range out {
		if v.Len() == 0 {
			fmt.Printf("%s: not found\n", keys[i])
			continue
		}
		fmt.Printf("%s: %s\n", keys[i], v.Col(2))
	}
	if err := t.Release(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 2 found
	// 7: free
	// 8: not found
	// 42: pro
}
