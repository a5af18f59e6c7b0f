package reader_test

import (
	"fmt"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader"
)

// A table compiled with --key tenant,user is looked up by the two values
// joined with JoinKey; reusing the key's buffer allocates nothing.
func ExampleJoinKey() {
	users := &source.Rows{Header: []string{"tenant", "user", "role"}, Data: [][]string{
		{"acme", "ann", "admin"}, {"globex", "ann", "viewer"},
	}}
	t, done, err := compileExample(users, compile.Options{Key: []string{"tenant", "user"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	role := t.ColumnIndex("role")
	var key []byte
	var row reader.Row
	for _, tenant := range []string{"acme", "globex", "initech"} {
		key = reader.JoinKey(key[:0], []byte(tenant), []byte("ann"))
		if t.Get(key, &row) {
			fmt.Printf("%q: %s\n", key, row.Col(role))
		} else {
			fmt.Printf("%q: not found\n", key)
		}
	}
	// Output:
	// "acme\x1fann": admin
	// "globex\x1fann": viewer
	// "initech\x1fann": not found
}
