package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// signalsClaimed counts the commands running that handle SIGINT and
// SIGTERM themselves (lut sample --send reports what it sent).
var signalsClaimed atomic.Int32

// claimSignals tells the handler of handleSignals to leave SIGINT and
// SIGTERM to the caller until the returned function is called.
func claimSignals() (release func()) {
	signalsClaimed.Add(1)
	return func() { signalsClaimed.Add(-1) }
}

// handleSignals makes SIGINT and SIGTERM end lut after removing the
// temporary files it is writing (fsutil.RemoveTemps): a compile or build
// interrupted leaves no .NAME.tmp-* or .NAME.build-* behind. It says so on
// stderr, with the count of files removed when there were any, and erases
// a progress line first only when stderr is a terminal. The exit status is
// 128 plus the signal's number, as a shell reports it.
func handleSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			if signalsClaimed.Load() > 0 {
				continue
			}
			n := fsutil.RemoveTemps()
			msg := fmt.Sprintf("lut: %v: stopped", sig)
			switch {
			case n == 1:
				msg += ", 1 temporary file removed"
			case n > 1:
				msg += fmt.Sprintf(", %d temporary files removed", n)
			}
			if isTerminal(os.Stderr) {
				// A progress line may be drawn: erase it first.
				msg = "\r\033[K" + msg
			}
			fmt.Fprintln(os.Stderr, msg)
			code := 128 + int(syscall.SIGINT)
			if sig == syscall.SIGTERM {
				code = 128 + int(syscall.SIGTERM)
			}
			os.Exit(code)
		}
	}()
}
