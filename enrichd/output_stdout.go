package enrichd

import (
	"bufio"
	"io"
	"os"
)

func init() {
	RegisterOutput(OutputKind{Type: "stdout", New: func(oc *OutputConfig, env *Env) (Output, error) {
		st := env.OutputStats()
		return newStreamOutput(&writerSink{w: bufio.NewWriterSize(os.Stdout, oc.BufferSize), under: os.Stdout, st: st}, st, env.Log), nil
	}})
}

// writerSink writes to an io.Writer through a buffer.
type writerSink struct {
	w     *bufio.Writer
	under io.Writer
	st    *OutputStats
}

func (s *writerSink) Write(p []byte) error {
	err := writeThrough(s.w, s.under, p)
	if err != nil {
		s.st.Errors.Add(1)
		return err
	}
	s.st.Bytes.Add(uint64(len(p)))
	return nil
}

func (s *writerSink) Flush() error { return s.w.Flush() }
func (s *writerSink) Close() error { return s.w.Flush() }
