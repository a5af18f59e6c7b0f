package enrichd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

func init() {
	RegisterInput(InputKind{Type: "file", Endpoint: EndpointPath, Format: FormatRaw, Finite: true, New: newFileInput})
}

// fileInput reads newline-delimited messages from a file or stdin ("-");
// a final line without newline is delivered. It ends at the end of the
// file.
type fileInput struct {
	cfg   *InputConfig
	env   *Env
	stats *InputStats
	r     io.ReadCloser
	stopState
	served    chan struct{} // serve returned
	done      chan struct{}
	doneOnce  sync.Once
	closeOnce sync.Once
}

func newFileInput(ic *InputConfig, env *Env) (Input, error) {
	r := io.NopCloser(os.Stdin)
	if ic.Path != "-" {
		f, err := os.Open(ic.Path)
		if err != nil {
			return nil, err
		}
		// A directory opens, and only its first read fails: refused
		// here, the daemon does not start (and exit 0) having read
		// nothing.
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s is a directory: a file input reads one file (or - for stdin)", ic.Path)
		}
		r = f
	}
	return &fileInput{cfg: ic, env: env, stats: env.InputStats(), r: r, served: make(chan struct{}), done: make(chan struct{})}, nil
}

func (f *fileInput) Start()                { go f.serve() }
func (f *fileInput) Done() <-chan struct{} { return f.done }
func (f *fileInput) Addr() net.Addr        { return nil }
func (f *fileInput) Stats() *InputStats    { return f.stats }

func (f *fileInput) Close() error {
	var err error
	f.closeOnce.Do(func() { err = f.r.Close() })
	return err
}

func (f *fileInput) finish() { f.doneOnce.Do(func() { close(f.done) }) }

// Stop makes the input stop between lines. One blocked reading a pipe
// that never ends (stdin) is abandoned at deadline.
func (f *fileInput) Stop(deadline time.Time) {
	f.stop(deadline)
	go func() {
		select {
		case <-f.served:
		case <-time.After(time.Until(deadline)):
			f.env.Log.Warn("a file input did not stop in time; abandoning it")
		}
		f.finish()
	}()
}

func (f *fileInput) serve() {
	defer f.finish()
	defer close(f.served)
	defer f.Close()
	bt := f.env.Batcher(f.stats, f.cfg.Format, false)
	src := newLineSource(f.r, f.cfg.MaxMessageSize)
	for !f.isStopping() {
		msg, trunc, err := src.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				f.stats.FrameErrors.Add(1)
				f.env.Log.Error("reading input failed", "err", err)
			}
			break
		}
		bt.Add(msg, trunc)
	}
	bt.Flush()
}
