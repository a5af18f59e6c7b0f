// mcenrich reads events on stdin, looks up cust=<Index> in memcached with
// github.com/bradfitz/gomemcache and writes each event with
// ` customer="<value>"` (or "MISS") to stdout. -batch 1 (default) is one
// Get round trip per event; -batch N uses GetMulti on N events at a time.
package main

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"log"
	"os"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lutkit/lutkit/bench/peers/internal/bstat"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:21211", "memcached address")
	batch := flag.Int("batch", 1, "events per request (1 = Get per event, >1 = GetMulti)")
	flag.Parse()
	start := time.Now()
	mc := memcache.New(*addr)
	mc.Timeout = 5 * time.Second
	mc.MaxIdleConns = 4
	if err := mc.Ping(); err != nil {
		log.Fatal(err)
	}
	bstat.Report("ready", start, nil)

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bstat.NewOut(os.Stdout)
	var events, hits int
	emit := func(line []byte, val []byte, ok bool) {
		out.Write(line)
		out.WriteString(` customer="`)
		if ok {
			hits++
			out.Write(val)
		} else {
			out.WriteString("MISS")
		}
		out.WriteString("\"\n")
	}
	var pend [][]byte
	var keys []string
	flush := func() {
		if len(pend) == 0 {
			return
		}
		got, err := mc.GetMulti(keys)
		if err != nil {
			log.Fatal(err)
		}
		for i, l := range pend {
			it, ok := got[keys[i]]
			if ok {
				emit(l, it.Value, true)
			} else {
				emit(l, nil, false)
			}
		}
		pend, keys = pend[:0], keys[:0]
	}
	for {
		line, err := in.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			events++
			key := string(bstat.Token(line, "cust="))
			if *batch <= 1 {
				it, gerr := mc.Get(key)
				switch {
				case gerr == nil:
					emit(line, it.Value, true)
				case errors.Is(gerr, memcache.ErrCacheMiss):
					emit(line, nil, false)
				default:
					log.Fatal(gerr)
				}
			} else {
				pend = append(pend, append([]byte(nil), line...))
				keys = append(keys, key)
				if len(pend) >= *batch {
					flush()
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			log.Fatal(err)
		}
	}
	flush()
	if err := out.Flush(); err != nil {
		log.Fatal(err)
	}
	bstat.Report("done", start, map[string]any{"events": events, "hits": hits})
}
