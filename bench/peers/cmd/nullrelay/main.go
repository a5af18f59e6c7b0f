// nullrelay is the cost of moving the bytes: the peer harness's TCP input,
// framing and file output with nothing in between. It listens on a TCP
// address, splits each connection's stream into newline-framed events (as
// enrichd, rsyslog and syslog-ng do for these events), and appends every
// event as one line to the output file, through a 256 KiB buffer written
// out whenever a connection has no more bytes ready. It does not parse,
// look up or encode anything, so its CPU per event is what any relay of
// these events over TCP into a file pays at least; the harness reports
// each peer's CPU per event as a multiple of it.
package main

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"log"
	"net"
	"os"
	"sync"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:5514", "TCP address to listen on")
	outPath := flag.String("out", "", "output file (appended to)")
	flag.Parse()
	if *outPath == "" {
		log.Fatal("nullrelay: --out is required")
	}
	f, err := os.OpenFile(*outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	out := &output{w: bufio.NewWriterSize(f, 256<<10)}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			if err := relay(c, out); err != nil {
				log.Print(err)
			}
		}()
	}
}

// output is the file all connections write their events to.
type output struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// relay copies the newline-framed events of one connection to out.
func relay(c net.Conn, out *output) error {
	defer func() { _ = c.Close() }()
	in := bufio.NewReaderSize(c, 256<<10)
	for {
		line, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // an event longer than the buffer
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n') // the last event, without its newline
			}
			out.mu.Lock()
			_, werr := out.w.Write(line)
			if werr == nil && in.Buffered() == 0 {
				werr = out.w.Flush()
			}
			out.mu.Unlock()
			if werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			out.mu.Lock()
			defer out.mu.Unlock()
			return out.w.Flush()
		}
		if err != nil {
			return err
		}
	}
}
