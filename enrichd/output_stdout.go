package enrichd

import (
	"io"
	"os"
)

func init() {
	RegisterOutput(OutputKind{Type: "stdout", New: func(oc *OutputConfig, env *Env) (Output, error) {
		st := env.OutputStats()
		return newStreamOutput(newWriterSink(os.Stdout, oc.BufferSize, st), st, env.Log), nil
	}})
}

// writerSink writes to an io.Writer through a buffer.
type writerSink struct {
	w     lineBuf
	under io.Writer
	send  sendFunc
	st    *OutputStats
}

func newWriterSink(under io.Writer, size int, st *OutputStats) *writerSink {
	s := &writerSink{w: newLineBuf(size), under: under, st: st}
	s.send = s.writeTo
	return s
}

// writeTo writes p; on an error, a torn last line is written again whole
// (the reader sees its start twice: a pipe cannot be cut back).
func (s *writerSink) writeTo(p []byte) (int, error) {
	n, err := s.under.Write(p)
	if err != nil {
		n = wholeLines(p, n)
	}
	s.st.Bytes.Add(uint64(n))
	return n, err
}

func (s *writerSink) Write(p []byte, _ int) error { return s.w.write(p, s.send) }
func (s *writerSink) Flush() error                { return s.w.flush(s.send) }
func (s *writerSink) Close() error                { return s.Flush() }
