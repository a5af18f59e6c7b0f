package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/tables"
)

// One rule enriches syslog events: the value of each one's cust pair is
// looked up in the table customers and its row written under customer; a
// miss gets the rule's tag.
func ExampleWorker_Process() {
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
	set, err := tables.Open(dir, tables.Options{NoWatch: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	rules := []engine.Rule{{Name: "customer", Table: "customers", Fields: []string{"cust"}, Target: "customer", MissTag: "customer_miss"}}
	eng, err := engine.New(rules, engine.Options{}, set)
	if err != nil {
		fmt.Println(err)
		return
	}
	var b engine.Batch
	b.Format = engine.Syslog
	b.Add([]byte("<13>1 2026-03-01T12:00:00Z web1 app - - - login cust=42"), 0)
	b.Add([]byte("<13>1 2026-03-01T12:00:01Z web1 app - - - login cust=43"), 0)
	var out engine.Lines
	eng.NewWorker(64).Process(&b, &out, time.Unix(0, 0))
	fmt.Print(string(out.B))
	// Output:
	// {"@timestamp":"2026-03-01T12:00:00.000Z","host":{"name":"web1"},"log":{"syslog":{"facility":{"code":1},"severity":{"code":5},"appname":"app"}},"message":"login cust=42","cust":"42","customer":{"id":"42","email":"ann@example.com"}}
	// {"@timestamp":"2026-03-01T12:00:01.000Z","host":{"name":"web1"},"log":{"syslog":{"facility":{"code":1},"severity":{"code":5},"appname":"app"}},"message":"login cust=43","cust":"43","tags":["customer_miss"]}
}
