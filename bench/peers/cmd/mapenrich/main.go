// mapenrich is the naive in-process baseline: it loads the customers CSV into
// a map[string][]string keyed on Index, then reads events on stdin and writes
// each event with ` customer="<fields joined by |>"` (or "MISS") to stdout.
// It reports load time, RSS, HeapInuse, GC count and total GC pause on stderr.
package main

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/lutkit/lutkit/bench/peers/internal/bstat"
)

func main() {
	csvPath := flag.String("csv", "", "customers CSV")
	flag.Parse()
	start := time.Now()
	m := map[string][]string{}
	n, err := bstat.ReadCSV(*csvPath, func(idx string, rest []string) { m[idx] = rest })
	if err != nil {
		log.Fatal(err)
	}
	bstat.Report("ready", start, map[string]any{"rows": n, "load_s": time.Since(start).Seconds()})

	t1 := time.Now()
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bstat.NewOut(os.Stdout)
	var events, hits int
	for {
		line, err := in.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			events++
			out.Write(line)
			out.WriteString(` customer="`)
			if rec, ok := m[string(bstat.Token(line, "cust="))]; ok {
				hits++
				out.WriteString(strings.Join(rec, "|"))
			} else {
				out.WriteString("MISS")
			}
			out.WriteString("\"\n")
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			log.Fatal(err)
		}
	}
	if err := out.Flush(); err != nil {
		log.Fatal(err)
	}
	bstat.Report("done", start, map[string]any{"events": events, "hits": hits,
		"enrich_s": time.Since(t1).Seconds(), "rows": len(m)})
}
