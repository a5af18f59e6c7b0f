package tables_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/tables"
)

// A set opened from a directory of NAME.lut files: each lookup takes a
// snapshot, in which every table stays mapped until Release, whatever
// version the watcher publishes meanwhile.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	customers := &source.Rows{Header: []string{"id", "email"}, Data: [][]string{{"42", "ann@example.com"}}}
	if _, err := compile.File(customers, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"id"}}); err != nil {
		fmt.Println(err)
		return
	}
	set, err := tables.Open(dir, tables.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	snap := set.Acquire()
	defer snap.Release()
	fmt.Println(snap.Names())
	if t := snap.LUT("customers"); t != nil {
		if v, ok := t.Lookup([]byte("42")); ok {
			fmt.Printf("%s\n", v.Col(t.ColumnIndex("email")))
		}
	}
	// Output:
	// [customers]
	// ann@example.com
}
