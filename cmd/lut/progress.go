package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal (a tty: not /dev/null, which
// is a character device too, nor a file or a pipe).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressOn decides from a --progress mode whether to draw progress on w.
func progressOn(w io.Writer, mode string) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return isTerminal(w)
}

// progressLine formats a progress line: what is counted so far, and, when
// the total is known, a bar, the percentage and the time left at the rate
// so far.
func progressLine(count string, frac float64, elapsed time.Duration) string {
	line := "\r" + count
	if frac > 0 {
		frac = min(frac, 1)
		const width = 24
		n := int(frac * width)
		eta := time.Duration(elapsed.Seconds() / frac * (1 - frac) * float64(time.Second))
		line += fmt.Sprintf("  [%s%s] %3.0f%%  ETA %s", strings.Repeat("#", n), strings.Repeat(".", width-n), 100*frac, eta.Round(time.Second))
	}
	return line + "\033[K"
}

// countMeter draws the progress of a job of a known number of steps (the
// tables of lut build, the files of lut verify), weighted by size.
type countMeter struct {
	mu         sync.Mutex
	w          io.Writer
	on         bool
	what       string
	start      time.Time
	done, n    int
	doneW, tot int64
	drawn      bool
}

func newCountMeter(w io.Writer, on bool, what string, n int, total int64) *countMeter {
	return &countMeter{w: w, on: on, what: what, start: time.Now(), n: n, tot: total}
}

// step counts one step of weight done and redraws the line.
func (m *countMeter) step(weight int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done++
	m.doneW += weight
	m.draw()
}

// stepTo sets the steps and the weight done so far and redraws the line.
func (m *countMeter) stepTo(done int, doneWeight int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done, m.doneW = done, doneWeight
	m.draw()
}

// draw redraws the line (m.mu held).
func (m *countMeter) draw() {
	if !m.on {
		return
	}
	frac := float64(m.done) / float64(max(m.n, 1))
	if m.tot > 0 {
		frac = float64(m.doneW) / float64(m.tot)
	}
	fmt.Fprint(m.w, progressLine(fmt.Sprintf("%d/%d %s", m.done, m.n, m.what), frac, time.Since(m.start)))
	m.drawn = true
}

// clear erases the line, before other output and at the end.
func (m *countMeter) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drawn {
		fmt.Fprint(m.w, "\r\033[K")
		m.drawn = false
	}
}

// progressFlag defines the --progress flag on p: auto (the default),
// always or never; any other value is refused as the flag is parsed.
func progressFlag(f *pflag.FlagSet, p *string, usage string) {
	*p = "auto"
	f.Var(progressValue{p}, "progress", usage)
}

type progressValue struct{ p *string }

func (v progressValue) Set(s string) error {
	switch s {
	case "auto", "always", "never":
		*v.p = s
		return nil
	}
	return fmt.Errorf("must be auto, always or never, not %q", s)
}

func (v progressValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v progressValue) Type() string { return "string" }
