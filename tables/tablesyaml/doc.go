// Package tablesyaml reads and validates tables.yaml, the declarative list
// of a fleet's tables that "lut build" builds (package tablebuild, whose
// documentation shows the file): LoadConfig and ParseConfig return every
// problem at once, each at its file:line:column. A table's options decode
// into the compilers' own specs (compile.Options, iptable.Options,
// source.Options), whose json names are the file's keys.
//
// It links no source format's reader, so that its parser is fuzzed in a
// small binary (FuzzParseConfig).
package tablesyaml
