// mcload bulk-loads the customers CSV into memcached (key = Index, value =
// remaining fields joined by |) with pipelined `set ... noreply` commands on
// one connection, then waits for a meta no-op (mn) so the server has
// processed every set before it reports.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"github.com/lutkit/lutkit/bench/peers/internal/bstat"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:21211", "memcached address")
	csvPath := flag.String("csv", "", "customers CSV")
	flag.Parse()
	start := time.Now()
	c, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(c, 1<<20)
	n, err := bstat.ReadCSV(*csvPath, func(idx string, rest []string) {
		v := strings.Join(rest, "|")
		fmt.Fprintf(w, "set %s 0 0 %d noreply\r\n%s\r\n", idx, len(v), v)
	})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = w.WriteString("mn\r\n") // an error shows at Flush
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "MN") {
		log.Fatalf("unexpected reply %q %v", line, err)
	}
	bstat.Report("loaded", start, map[string]any{"rows": n, "load_s": time.Since(start).Seconds()})
}
