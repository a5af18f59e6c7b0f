package serve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lutkit/lutkit/tables"
)

const benchRows = 100_000

// sharedSet builds the 100k-row table for one benchmark function.
func sharedSet(b *testing.B) *tables.Set { return testSet(b, benchRows) }

// BenchmarkHTTPGet is a single-key GET over one keep-alive connection to
// the API on 127.0.0.1, from a Go client loop.
func BenchmarkHTTPGet(b *testing.B) {
	set := sharedSet(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: NewAPI(set, HTTPOptions{Listen: ln.Addr().String()})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("serve: %v", err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	base := "http://" + ln.Addr().String() + "/v1/tables/customers/"
	urls := make([]string, 1024)
	for i := range urls {
		urls[i] = base + strconv.Itoa(i*97%benchRows)
	}
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		resp, err := client.Get(urls[i%len(urls)])
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// pipelinedGets writes batches of keysPerWrite "get" commands in one
// write and reads the answers, over one connection.
func pipelinedGets(b *testing.B, addr string, keysPerWrite int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var reqs [][]byte
	for j := range 16 {
		var sb strings.Builder
		for i := range keysPerWrite {
			fmt.Fprintf(&sb, "get customers:%d\r\n", (j*keysPerWrite+i)*31%benchRows)
		}
		reqs = append(reqs, []byte(sb.String()))
	}
	r := bufio.NewReaderSize(c, 256<<10)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for i := 0; b.Loop(); i++ {
		if _, err := c.Write(reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		for ends := 0; ends < keysPerWrite; {
			l, err := r.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(l) == 5 && string(l) == "END\r\n" {
				ends++
			} else if l[0] == 'V' {
				// VALUE key flags bytes: skip the data block.
				sp := bytes.LastIndexByte(l, ' ')
				sz, _ := strconv.Atoi(bstr(bytes.TrimRight(l[sp+1:], "\r\n")))
				if _, err := r.Discard(sz + 2); err != nil {
					b.Fatal(err)
				}
			} else {
				b.Fatalf("unexpected %q", l)
			}
		}
		n += keysPerWrite
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "gets/s")
}

// BenchmarkMemcachedPipelined compares our listener with a real memcached
// holding the same keys and values: 100 pipelined gets per write.
func BenchmarkMemcachedPipelined(b *testing.B) {
	set := sharedSet(b)
	_, ours := startMemcachedOn(b, NewMemcached(set, MemcachedOptions{}))
	b.Run("lutkit", func(b *testing.B) { pipelinedGets(b, ours, 100) })
	b.Run("memcached", func(b *testing.B) {
		real := realMemcached(b)
		// Load every key the benchmark asks for with our values.
		oc, rc := memcache.New(ours), memcache.New(real)
		for j := 0; j < 16*100; j++ {
			k := fmt.Sprintf("customers:%d", j*31%benchRows)
			it, err := oc.Get(k)
			if err != nil {
				b.Fatal(err)
			}
			if err := rc.Set(&memcache.Item{Key: k, Value: it.Value}); err != nil {
				b.Fatal(err)
			}
		}
		pipelinedGets(b, real, 100)
	})
}
