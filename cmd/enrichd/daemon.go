package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	lutkittables "github.com/lutkit/lutkit/tables"

	"github.com/lutkit/lutkit/enrichd"
)

// runDaemon loads the configuration and runs the daemon until a signal
// stops it (or, with --check-config, only checks it).
func runDaemon(f *flags, stdout, stderr io.Writer) error {
	var last []byte
	if f.watch {
		// Read before the configuration is, so that a change made while
		// the daemon starts (which may take long) is seen.
		last, _ = os.ReadFile(f.config)
	}
	cfg, err := loadConfig(f)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	if f.check {
		return checkConfig(cfg, stdout)
	}
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
	// SIGHUP is caught before the start, which may take long (tables to
	// verify or download): one sent meanwhile (log rotation) would
	// otherwise end the process. It is handled once the daemon runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	d, err := enrichd.New(cfg, logger)
	if err != nil {
		logger.Error("start failed", "err", err)
		return &exitError{code: 1}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if f.watch {
		go watchConfig(ctx, f.config, last, hup)
	}
	go func() {
		for range hup {
			if f.config == "" {
				// Flags only: nothing to read again.
				d.Reopen()
				logger.Info("SIGHUP: outputs and TLS files reopened (no --config file to reload)")
				continue
			}
			// Logged and counted by Reload; a refused configuration
			// leaves the running one in place.
			_ = d.Reload(func() (*enrichd.Config, error) { return loadConfig(f) })
		}
	}()
	defer notifySystemd(ctx, d, logger)()
	if err := d.Run(ctx); err != nil {
		logger.Error("enrichd stopped with an error", "err", err)
		return &exitError{code: 1}
	}
	return nil
}

// watchConfig sends on reload whenever the content of the file at path
// changes from last (checked every second), as a SIGHUP would.
func watchConfig(ctx context.Context, path string, last []byte, reload chan<- os.Signal) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		if err != nil || bytes.Equal(b, last) {
			continue
		}
		last = b
		select {
		case reload <- syscall.SIGHUP:
		default: // a reload is pending already
		}
	}
}

// checkConfig checks the rules against the tables present and says what
// it checked.
func checkConfig(cfg *enrichd.Config, stdout io.Writer) error {
	if err := enrichd.CheckMemory(cfg); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	checked, err := enrichd.CheckTables(cfg)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	tables := ""
	switch {
	case checked:
		tables = "; rules checked against the tables in " + cfg.Tables.Path
	case lutkittables.IsRemote(cfg.Tables.Path):
		tables = "; remote tables: rules are checked against them when the daemon starts"
	case cfg.Tables.Path != "":
		tables = "; " + cfg.Tables.Path + " does not exist yet: rules not checked against tables"
	}
	name := cfg.File
	if name == "" {
		name = "flags"
	}
	fmt.Fprintf(stdout, "%s: ok (%d inputs, %d rules, %d outputs%s)\n", name, len(cfg.Inputs), len(cfg.Rules), len(cfg.Outputs), tables)
	return nil
}

func newLogger(cfg *enrichd.Config, w io.Writer) *slog.Logger {
	return enrichd.NewLogger(w, cfg.Log.Level, cfg.Log.Format)
}
