// Package config reads YAML configuration files into typed Go structs,
// reporting every problem at once as file:line:column: field: message.
//
// It is the one walker behind every configuration file of the project
// (enrichd.yaml, tables.yaml). A schema is plain Go code over the
// document's nodes, in the style of Prometheus' typed configuration: each
// struct decodes its own keys (Decoder.Mapping with a handler per key),
// and checks itself in a Validate method that works the same on a struct
// decoded from a file and on one filled from command-line flags.
//
//	d := &config.Decoder{File: path}
//	root := d.Document(data, `a mapping with an "inputs" list`)
//	d.Mapping(root, "", &cfg.At, config.Keys{
//		"listen": func(v *yaml.Node) { cfg.Listen, _ = d.String(v, "listen") },
//		"workers": func(v *yaml.Node) { cfg.Workers, _ = d.Int(v, "workers") },
//	})
//	v := &config.Validator{File: path, Errs: d.Errs}
//	s := v.In(&cfg.At, "")
//	s.Check("listen", config.CheckAddr(cfg.Listen))
//	return v.Err()
//
// # The rules every schema gets
//
//   - A mapping must be a mapping, a list a list; a key must be a plain
//     name, given once; an unknown key is an error that lists the known
//     ones.
//   - A string is a non-null scalar and is never empty ("" is an error,
//     not a way to say "default": leave the key out for that). A list of
//     strings is never empty either; a single string stands for a list of
//     one.
//   - Integers, sizes (64KiB, 4MiB), durations (5ms, 30s) and booleans
//     are checked as they are read.
//   - A value that fails to decode is reported once: its key is marked
//     failed in the struct's At, and Validate's checks of that key are
//     dropped, so a misspelt enum (type: fiel) gives one error, not also a
//     "required" one.
//
// # Positions
//
// Every struct of a schema embeds an At. Decoder.Mapping records in it
// where the struct and each of its keys were written; a Validator's
// errors take their position from it. A value set from a flag is marked
// with At.SetFlag, and its errors name the flag (--format: ...) instead of
// a position.
package config
