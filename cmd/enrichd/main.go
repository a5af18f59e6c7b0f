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
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type flags struct {
	config, tables, out, tcp, udp, file, format, http, verify string
	check, workersSet                                         bool
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fs.Visit(func(fl *flag.Flag) { f.workersSet = f.workersSet || fl.Name == "workers" })
	cfg, err := loadConfig(&f)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if f.check {
		checked, err := enrichd.CheckTables(cfg)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		tables := ""
		switch {
		case checked:
			tables = "; rules checked against the tables in " + cfg.Tables.Path
		case cfg.Tables.Path != "":
			tables = "; " + cfg.Tables.Path + " does not exist yet: rules not checked against tables"
		}
		fmt.Fprintf(stdout, "%s: ok (%d inputs, %d rules, %d outputs%s)\n", configName(cfg), len(cfg.Inputs), len(cfg.Rules), len(cfg.Outputs), tables)
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

// loadConfig reads the configuration file (if any), sets the flags'
// values on it and validates the whole: a flag's value is checked as the
// same setting in the file is, and its errors name the flag.
func loadConfig(f *flags) (*enrichd.Config, error) {
	if f.format != "" && f.tcp == "" && f.udp == "" && f.file == "" {
		return nil, &enrichd.ConfigError{Field: "--format", Msg: "only with --tcp, --udp or --file (an input in the file has its own format)"}
	}
	if f.config != "" {
		return enrichd.LoadConfigWith(f.config, f.apply)
	}
	cfg := enrichd.DefaultConfig()
	f.apply(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// apply sets the values of the flags given on cfg.
func (f *flags) apply(cfg *enrichd.Config) {
	var ins []enrichd.InputConfig
	input := func(typ enrichd.InputType, flag, listen, path string) {
		in := enrichd.InputConfig{Type: typ, Listen: listen, Path: path, Format: enrichd.Format(f.format)}
		in.At.SetFlag("", flag)
		in.At.SetFlag("format", "--format")
		ins = append(ins, in)
	}
	if f.tcp != "" {
		input("tcp", "--tcp", f.tcp, "")
	}
	if f.udp != "" {
		input("udp", "--udp", f.udp, "")
	}
	if f.file != "" {
		input("file", "--file", "", f.file)
	}
	if len(ins) > 0 {
		cfg.Inputs = ins
	}
	if f.out != "" {
		o := enrichd.OutputConfig{Type: "file", Path: f.out}
		if f.out == "-" {
			o = enrichd.OutputConfig{Type: "stdout"}
		}
		o.At.SetFlag("", "--out")
		cfg.Outputs = []enrichd.OutputConfig{o}
	}
	if f.tables != "" {
		cfg.Tables.Path = f.tables
		cfg.Tables.At.SetFlag("path", "--tables")
	}
	if f.verify != "" {
		cfg.Tables.Verify = enrichd.Verify(f.verify)
		cfg.Tables.At.SetFlag("verify", "--verify")
	}
	if f.http != "" {
		cfg.HTTP.Listen = f.http
		cfg.HTTP.At.SetFlag("listen", "--http")
	}
	if f.workersSet {
		cfg.Pipeline.Workers = f.workers
		cfg.Pipeline.At.SetFlag("workers", "--workers")
	}
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
