// mmdbenrich is a naive in-process Go reference for IP enrichment: it opens
// an MMDB with github.com/oschwald/maxminddb-golang/v2, reads events on stdin,
// looks up src=<IPv4> and writes each event with
// ` geo="<country_code>|<state1>|<city>|<latitude>|<longitude>|<timezone>"`
// (or "MISS") to stdout.
package main

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"log"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/lutkit/lutkit/bench/peers/internal/bstat"
)

type rec struct {
	City        string  `maxminddb:"city"`
	CountryCode string  `maxminddb:"country_code"`
	State1      string  `maxminddb:"state1"`
	Latitude    float64 `maxminddb:"latitude"`
	Longitude   float64 `maxminddb:"longitude"`
	Timezone    string  `maxminddb:"timezone"`
}

func main() {
	dbPath := flag.String("mmdb", "", "MMDB file")
	flag.Parse()
	start := time.Now()
	db, err := maxminddb.Open(*dbPath)
	if err != nil {
		log.Fatal(err)
	}
	bstat.Report("ready", start, map[string]any{"nodes": db.Metadata.NodeCount})
	defer db.Close()

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bstat.NewOut(os.Stdout)
	var events, hits int
	var buf []byte
	for {
		line, err := in.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			events++
			out.Write(line)
			out.WriteString(` geo="`)
			var r rec
			ip, perr := netip.ParseAddr(string(bstat.Token(line, "src=")))
			res := db.Lookup(ip)
			if perr == nil && res.Found() && res.Decode(&r) == nil {
				hits++
				buf = buf[:0]
				buf = append(buf, r.CountryCode...)
				buf = append(buf, '|')
				buf = append(buf, r.State1...)
				buf = append(buf, '|')
				buf = append(buf, r.City...)
				buf = append(buf, '|')
				buf = strconv.AppendFloat(buf, r.Latitude, 'f', -1, 64)
				buf = append(buf, '|')
				buf = strconv.AppendFloat(buf, r.Longitude, 'f', -1, 64)
				buf = append(buf, '|')
				buf = append(buf, r.Timezone...)
				out.Write(buf)
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
	bstat.Report("done", start, map[string]any{"events": events, "hits": hits})
}
