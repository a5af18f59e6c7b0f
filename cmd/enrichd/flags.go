package main

import (
	"github.com/lutkit/lutkit/enrichd"
)

// flags are the command-line flags; apply sets them on a configuration.
type flags struct {
	config, tables, cacheDir, out, tcp, udp, file, format, http, verify string
	logLevel, logFormat                                                 string
	check, workersSet, watch                                            bool
	workers                                                             int
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

// apply sets the values of the flags given on cfg, marking each as set by
// its flag.
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
	if f.cacheDir != "" {
		cfg.Tables.CacheDir = f.cacheDir
		cfg.Tables.At.SetFlag("cache_dir", "--tables-cache")
	}
	if f.verify != "" {
		cfg.Tables.Verify = enrichd.Verify(f.verify)
		cfg.Tables.At.SetFlag("verify", "--verify")
	}
	if f.http != "" {
		cfg.HTTP.Listen = f.http
		cfg.HTTP.At.SetFlag("listen", "--http")
	}
	if f.logLevel != "" {
		cfg.Log.Level = enrichd.LogLevel(f.logLevel)
		cfg.Log.At.SetFlag("level", "--log-level")
	}
	if f.logFormat != "" {
		cfg.Log.Format = enrichd.LogFormat(f.logFormat)
		cfg.Log.At.SetFlag("format", "--log-format")
	}
	if f.workersSet {
		cfg.Pipeline.Workers = f.workers
		cfg.Pipeline.At.SetFlag("workers", "--workers")
	}
}
