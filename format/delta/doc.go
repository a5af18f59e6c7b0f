// Package delta encodes and applies .lutdelta files: a binary patch that
// rebuilds a new version of a .lut table exactly, byte for byte, from the
// previous version (the base), as specified in format/DELTA.md.
//
// A delta lists, in target order, ranges copied from the base, literal
// bytes, and at most one SLOTS range that the applier derives from the
// target's own DATA and MPHF sections (a changed row shifts every later
// record's offset, so every slot changes; deriving them costs no bytes).
// The node checks the rebuilt file against the full version's SHA-256, so
// a delta can never produce a table that differs from the full artifact:
// it produces that table or an error.
//
// Encode is the builder's side (both files in memory); Apply is the
// node's side, streaming, for untrusted deltas: every length and offset
// is checked, the output never exceeds the header's target size, and a
// bad delta is an error, never a panic.
package delta
