package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	lutkittables "github.com/lutkit/lutkit/tables"

	"github.com/lutkit/lutkit/enrichd"
)

// runDaemon loads the configuration and runs the daemon until a signal
// stops it (or, with --check-config, only checks it).
func runDaemon(f *flags, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(f)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	if f.check {
		return checkConfig(cfg, stdout)
	}
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
	d, err := enrichd.New(cfg, logger)
	if err != nil {
		logger.Error("start failed", "err", err)
		return &exitError{code: 1}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			d.Reopen()
		}
	}()
	defer notifySystemd(ctx, d, logger)()
	if err := d.Run(ctx); err != nil {
		logger.Error("enrichd stopped with an error", "err", err)
		return &exitError{code: 1}
	}
	return nil
}

// checkConfig checks the rules against the tables present and says what
// it checked.
func checkConfig(cfg *enrichd.Config, stdout io.Writer) error {
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
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.Log.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
