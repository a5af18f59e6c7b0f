package kafkatest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// BuildCustomers compiles an n-row customers table to path, keyed by
// Index. Row i has Index i, Customer Id "C<i>-<version>" (CustomerID) and
// the other columns of gen-customers.py's table, with values of about
// the same lengths.
func BuildCustomers(t testing.TB, path string, n, version int) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		w.WriteString("Index,Customer Id,First Name,Last Name,Company,City,Country,Phone 1,Phone 2,Email,Subscription Date,Website\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, "%d,C%d-%d,Name%d,Lastname%d,\"Company %d, Sons and Partners\",City %d,Country number %d,+1-555-%07d,(374)068-%04dx586,u%d@v%d.example,2021-12-26,https://www.company%d.example/\n",
				i, i, version, i, i, i, i, i%200, i, i%10000, i, version, i)
		}
		pw.CloseWithError(w.Flush())
	}()
	defer pr.Close() // ends the writer if the compile stops early
	src, err := source.NewCSVReader(pr, "customers.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp.lut"
	if _, err := compile.File(src, tmp, compile.Options{Key: []string{"Index"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// CustomerID returns the Customer Id that a table of BuildCustomers'
// version 1 gives customer cust.
func CustomerID(cust int) string { return fmt.Sprintf("C%d-1", cust) }
