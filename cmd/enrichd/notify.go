package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// readiness is what notifySystemd watches: enrichd.Daemon.
type readiness interface{ Ready() bool }

// notifySystemd speaks systemd's notify protocol (sd_notify, over the
// datagram socket $NOTIFY_SOCKET; nothing when it is unset): READY=1 once
// d is ready (every input listening, the tables loaded), WATCHDOG=1 every
// half of $WATCHDOG_USEC while the daemon runs, and STOPPING=1 when ctx
// ends (the signal that starts the drain) or, at the latest, when the
// returned function stops it (the daemon has returned: a drain faster than
// this goroutine was scheduled, or an error).
func notifySystemd(ctx context.Context, d readiness, logger *slog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	notify := func(state string) {
		if _, err := daemon.SdNotify(false, state); err != nil {
			logger.Warn("systemd notification failed", "state", state, "err", err)
		}
	}
	watchdog, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		logger.Warn("systemd watchdog setting ignored", "err", err)
	}
	go func() {
		defer close(finished)
		poll := time.NewTicker(20 * time.Millisecond)
		defer poll.Stop()
		var ping <-chan time.Time
		if watchdog > 0 {
			t := time.NewTicker(watchdog / 2)
			defer t.Stop()
			ping = t.C
		}
		ready := false
		for {
			select {
			case <-ctx.Done():
				notify(daemon.SdNotifyStopping)
				// The watchdog is not enforced while the unit stops; pings
				// go on until the drain ends all the same.
				for {
					select {
					case <-done:
						return
					case <-ping:
						notify(daemon.SdNotifyWatchdog)
					}
				}
			case <-done:
				// Run returned before ctx.Done was seen here (both may be
				// ready at once, and select picks at random): the daemon
				// stopped all the same.
				notify(daemon.SdNotifyStopping)
				return
			case <-poll.C:
				if !ready && d.Ready() {
					ready = true
					notify(daemon.SdNotifyReady)
					poll.Stop()
				}
			case <-ping:
				notify(daemon.SdNotifyWatchdog)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
