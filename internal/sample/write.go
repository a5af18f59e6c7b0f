package sample

import (
	"io"
	"runtime"
	"sync"
)

// chunkItems is how many rows or events one worker generates at a time.
const chunkItems = 4096

// writeOrdered writes gen's output for items first..last (inclusive) to w,
// in order, generating chunks of items on every core.
func writeOrdered(w io.Writer, first, last int, gen func(dst []byte, i int) []byte) error {
	if last < first {
		return nil
	}
	type chunk struct {
		from, to int
		buf      *[]byte
		done     chan struct{}
	}
	workers := runtime.GOMAXPROCS(0)
	order := make(chan *chunk, 2*workers) // chunks in output order
	jobs := make(chan *chunk, 2*workers)
	stop := make(chan struct{})
	pool := sync.Pool{New: func() any { b := make([]byte, 0, 1<<20); return &b }}

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				buf := (*c.buf)[:0]
				for i := c.from; i <= c.to; i++ {
					buf = gen(buf, i)
				}
				*c.buf = buf
				close(c.done)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for from := first; from <= last; from += chunkItems {
			c := &chunk{from: from, to: min(from+chunkItems-1, last), buf: pool.Get().(*[]byte), done: make(chan struct{})}
			select {
			case <-stop:
				return
			case order <- c:
			}
			jobs <- c
		}
	}()
	var err error
	for c := range order {
		<-c.done
		if err == nil {
			if _, err = w.Write(*c.buf); err != nil {
				close(stop)
			}
		}
		pool.Put(c.buf)
	}
	wg.Wait()
	return err
}
