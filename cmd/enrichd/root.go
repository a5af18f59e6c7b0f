package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/internal/version"
)

// exitError carries an exit status and what to print for it ("" when it
// has been printed).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitStatus prints err and returns the status it stands for.
func exitStatus(err error, stderr io.Writer) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	}
	// A usage error from the flag parser.
	fmt.Fprintf(stderr, "enrichd: %v\nRun 'enrichd --help' for usage.\n", err)
	return 2
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "enrichd [--config FILE] [flags]",
		Short: "Enrich log events from lookup tables and write JSON lines",
		Long: `enrichd receives log events (syslog over UDP and TCP, JSON or raw lines
over TCP or from a file, messages of Kafka topics), enriches each one from
the .lut and .mmdb tables of a live table set, and writes enriched JSON
lines (stdout, a file, a TCP peer or a Kafka topic). It serves metrics and
health checks over HTTP, table lookups over HTTP and memcached, and swaps
new versions of the tables in while events flow.

The configuration is a YAML file: docs/config.md lists every key, with
its type and default, examples/enrichd.yaml shows them in use and
docs/enrichd.md describes the daemon. The flags below cover simple cases
and replace what the file says. Flag values are checked as the same
settings in the file are.

Signals: SIGTERM and SIGINT drain every accepted event and exit; SIGHUP
reloads the configuration file (checked first; a bad one is refused and
logged, and the running one stays; a reload applies the rules and the
outputs, keeping the outputs that did not change open, and refuses
changes to other sections, which need a restart), reopens the
file outputs (log rotation) and reads the TLS certificate, key and
client CA files of every listener again.

Exit status: 0 on success, 1 when the daemon fails to start or stops with
an error, 2 on usage and configuration errors.`,
		Example: `  enrichd --config /etc/enrichd/enrichd.yaml
  enrichd --config enrichd.yaml --check-config
  enrichd --tables /var/lib/lutkit/dist --tcp 127.0.0.1:5514 --out -
  enrichd --tables dist --file events.log --format syslog --out enriched.json
  enrichd --tables dist --http 127.0.0.1:9514          # a lookup server only
  enrichd --tables https://tables.example/prod/MANIFEST.json --tables-cache /var/cache/enrichd --tcp :5514 --out -`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String("enrichd"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.workersSet = cmd.Flags().Changed("workers")
			if f.watch && f.config == "" {
				return &exitError{code: 2, msg: "--watch-config: only with --config FILE"}
			}
			return runDaemon(&f, stdout, stderr)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetVersionTemplate("{{.Version}}\n")
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.config, "config", "", "the configuration `FILE` (YAML)")
	fl.BoolVar(&f.watch, "watch-config", false, "reload the configuration file whenever it changes (checked every second), as on SIGHUP")
	fl.BoolVar(&f.check, "check-config", false, "check the configuration (and the rules against the tables present) and exit: 0 when valid, 2 with every error")
	fl.StringVar(&f.tables, "tables", "", "the table directory or manifest at `PATH`, or a manifest in a store: https://HOST/PREFIX/MANIFEST.json or s3://BUCKET/PREFIX/ (replaces tables.path)")
	fl.StringVar(&f.cacheDir, "tables-cache", "", "the cache `DIR` of tables from a store (replaces tables.cache_dir)")
	fl.StringVar(&f.verify, "verify", "", "table verification `LEVEL`: full, digest or none (replaces tables.verify)")
	fl.StringVar(&f.tcp, "tcp", "", "listen for events over TCP on `ADDR` (replaces the configured inputs)")
	fl.StringVar(&f.udp, "udp", "", "listen for syslog over UDP on `ADDR` (replaces the configured inputs)")
	fl.StringVar(&f.file, "file", "", "read events from `PATH`, - for stdin (replaces the configured inputs)")
	fl.StringVar(&f.format, "format", "", "`FORMAT` of the --tcp, --udp and --file inputs: syslog, json or raw")
	fl.StringVar(&f.out, "out", "", "write JSON lines to `PATH`, - for stdout (replaces the configured outputs)")
	fl.StringVar(&f.http, "http", "", "serve /metrics, /healthz, /readyz and the lookup API on `ADDR` (replaces http.listen)")
	fl.StringVar(&f.logLevel, "log-level", "", "log `LEVEL`: debug, info, warn or error (replaces log.level)")
	fl.StringVar(&f.logFormat, "log-format", "", "log `FORMAT`: json or text (replaces log.format)")
	fl.IntVar(&f.workers, "workers", 0, "`N` worker goroutines; 0 for GOMAXPROCS (replaces pipeline.workers)")
	cmd.Flags().BoolP("help", "h", false, "show this help")
	cmd.Flags().Bool("version", false, "print the version and exit")
	return cmd
}
