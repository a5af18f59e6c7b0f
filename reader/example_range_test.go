package reader_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader"
)

// A DHCP lease table, compiled with --key ip --valid-from start
// --valid-to end, looked up at an event's time: GetAt takes the time in
// Unix seconds. valid_to is exclusive, so at noon the lease that starts
// at noon answers.
func ExampleTable_GetAt() {
	leases := &source.Rows{Header: []string{"ip", "start", "end", "user"}, Data: [][]string{
		{"10.1.2.3", "2026-03-01T08:00:00Z", "2026-03-01T12:00:00Z", "ann"},
		{"10.1.2.3", "2026-03-01T12:00:00Z", "", "bob"},
	}}
	t, done, err := compileExample(leases, compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	user := t.ColumnIndex("user")
	var row reader.Row
	for _, at := range []string{"2026-03-01T07:59:59Z", "2026-03-01T11:59:59Z", "2026-03-01T12:00:00Z"} {
		ts, _ := time.Parse(time.RFC3339, at)
		if t.GetAt([]byte("10.1.2.3"), ts.Unix(), &row) {
			fmt.Printf("%s: %s\n", at, row.Col(user))
		} else {
			fmt.Printf("%s: no lease\n", at)
		}
	}
	// Output:
	// 2026-03-01T07:59:59Z: no lease
	// 2026-03-01T11:59:59Z: ann
	// 2026-03-01T12:00:00Z: bob
}

// A port-range table, compiled with --match range --range-columns
// from,to --overlap narrowest: MatchRange returns every range holding
// the port, narrowest first; GetRange the first of them.
func ExampleTable_MatchRange() {
	ports := &source.Rows{Header: []string{"from", "to", "service"}, Data: [][]string{
		{"0", "1023", "system"}, {"443", "443", "https"}, {"1024", "49151", "registered"},
	}}
	opts := compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, Overlap: "narrowest"}
	t, done, err := compileExample(ports, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	out := make([]reader.View, 4)
	for _, port := range []int64{443, 8080, 65000} {
		n := t.MatchRange(port, out)
		fmt.Print(port, ":")
		for _, v := range out[:n] {
			fmt.Printf(" %s", v.Col(2))
		}
		fmt.Println()
	}
	// Output:
	// 443: https system
	// 8080: registered
	// 65000:
}

// compileExample compiles rows into a table in a temporary directory and
// opens it; done closes it and removes the directory.
func compileExample(rows *source.Rows, opts compile.Options) (*reader.Table, func(), error) {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "t.lut")
	if _, err := compile.File(rows, path, opts); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	t, err := reader.Open(path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return t, func() { t.Close(); os.RemoveAll(dir) }, nil
}
