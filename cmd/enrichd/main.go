// Command enrichd is the enrichment daemon: see package enrichd and
// docs/enrichd.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type flags struct {
	config, tables, out, tcp, udp, file, format, http, verify string
	check                                                     bool
	workers                                                   int
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("enrichd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f flags
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.BoolVar(&f.check, "check-config", false, "validate the configuration and exit")
	fs.StringVar(&f.tables, "tables", "", "table directory or manifest (overrides tables.path)")
	fs.StringVar(&f.verify, "verify", "", "table verification: full, digest or none (overrides tables.verify)")
	fs.StringVar(&f.tcp, "tcp", "", "listen for syslog over TCP on ADDR (replaces the configured inputs)")
	fs.StringVar(&f.udp, "udp", "", "listen for syslog over UDP on ADDR (replaces the configured inputs)")
	fs.StringVar(&f.file, "file", "", "read lines from a file, - for stdin (replaces the configured inputs)")
	fs.StringVar(&f.format, "format", "", "format of the -tcp, -udp and -file inputs: syslog, json or raw")
	fs.StringVar(&f.out, "out", "", "write JSON lines to a file, - for stdout (replaces the configured outputs)")
	fs.StringVar(&f.http, "http", "", "serve /metrics, /healthz and /readyz on ADDR")
	fs.IntVar(&f.workers, "workers", 0, "worker goroutines (default GOMAXPROCS)")
	showVersion := fs.Bool("version", false, "print the version and commit, and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("enrichd"))
		return 0
	}
	cfg, err := loadConfig(&f)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if f.check {
		fmt.Fprintf(stdout, "%s: ok (%d inputs, %d rules, %d outputs)\n", configName(cfg), len(cfg.Inputs), len(cfg.Rules), len(cfg.Outputs))
		return 0
	}
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
	d, err := enrichd.New(cfg, logger)
	if err != nil {
		logger.Error("start failed", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			d.Reopen()
		}
	}()
	if err := d.Run(ctx); err != nil {
		logger.Error("enrichd stopped with an error", "err", err)
		return 1
	}
	return 0
}

func configName(cfg *enrichd.Config) string {
	if cfg.File == "" {
		return "flags"
	}
	return cfg.File
}

func loadConfig(f *flags) (*enrichd.Config, error) {
	var cfg *enrichd.Config
	if f.config != "" {
		var err error
		opts := enrichd.LoadOptions{NoInputs: f.tcp != "" || f.udp != "" || f.file != "", NoOutputs: f.out != ""}
		if cfg, err = enrichd.LoadConfigWith(f.config, opts); err != nil {
			return nil, err
		}
	} else {
		cfg = enrichd.DefaultConfig()
	}
	format := f.format
	var ins []enrichd.InputConfig
	if f.tcp != "" {
		ins = append(ins, enrichd.InputConfig{Type: "tcp", Listen: f.tcp, Format: format, MaxMessageSize: enrichd.DefaultMaxMessageSize, MaxConnections: enrichd.DefaultMaxConnections})
	}
	if f.udp != "" {
		ins = append(ins, enrichd.InputConfig{Type: "udp", Listen: f.udp, Format: format, MaxMessageSize: enrichd.DefaultMaxMessageSize})
	}
	if f.file != "" {
		ins = append(ins, enrichd.InputConfig{Type: "file", Path: f.file, Format: format, MaxMessageSize: enrichd.DefaultMaxMessageSize})
	}
	if len(ins) > 0 {
		cfg.Inputs = ins
	}
	if f.out != "" {
		if f.out == "-" {
			cfg.Outputs = []enrichd.OutputConfig{{Type: "stdout", BufferSize: enrichd.DefaultOutputBuffer}}
		} else {
			cfg.Outputs = []enrichd.OutputConfig{{Type: "file", Path: f.out, BufferSize: enrichd.DefaultOutputBuffer}}
		}
	}
	if f.tables != "" {
		cfg.Tables.Path = f.tables
	}
	if f.verify != "" {
		cfg.Tables.Verify = f.verify
	}
	if f.http != "" {
		cfg.HTTP.Listen = f.http
	}
	if f.workers > 0 {
		cfg.Pipeline.Workers = f.workers
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
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
