// sqlenrich reads events on stdin, looks up cust=<Index> in an SQLite table
// (unique index on "Index") through modernc.org/sqlite (pure Go) with one
// prepared SELECT per event, and writes each event with
// ` customer="<fields joined by |>"` (or "MISS") to stdout.
package main

import (
	"bufio"
	"database/sql"
	"errors"
	"flag"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lutkit/lutkit/bench/peers/internal/bstat"
)

func main() {
	dbPath := flag.String("db", "", "SQLite database made by the prepare step")
	mmap := flag.Int64("mmap", 1<<30, "PRAGMA mmap_size in bytes (0 = off)")
	flag.Parse()
	start := time.Now()
	dsn := "file:" + *dbPath + "?mode=ro&_pragma=query_only(1)&_pragma=mmap_size(" +
		strconv.FormatInt(*mmap, 10) + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	stmt, err := db.Prepare(`SELECT "Customer Id","First Name","Last Name","Company","City",` +
		`"Country","Phone 1","Phone 2","Email","Subscription Date","Website" ` +
		`FROM customers WHERE "Index" = ?`)
	if err != nil {
		log.Fatal(err)
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM customers`).Scan(&rows); err != nil {
		log.Fatal(err)
	}
	bstat.Report("ready", start, map[string]any{"rows": rows})

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bstat.NewOut(os.Stdout)
	var events, hits int
	f := make([]string, 11)
	dst := make([]any, 11)
	for i := range f {
		dst[i] = &f[i]
	}
	for {
		line, err := in.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			events++
			out.Write(line)
			out.WriteString(` customer="`)
			switch qerr := stmt.QueryRow(string(bstat.Token(line, "cust="))).Scan(dst...); qerr {
			case nil:
				hits++
				out.WriteString(strings.Join(f, "|"))
			case sql.ErrNoRows:
				out.WriteString("MISS")
			default:
				log.Fatal(qerr)
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
