// Package rows holds the interop test of the row encoding: a hostile row
// compiled with the lut binary must come out as the same bytes from lut
// get, lut export --format jsonl, enrichd's HTTP API fetched with curl,
// its memcached listener fetched with memccat and enrichd's enriched
// events, and those bytes must be what encoding/json writes for the row.
//
// The package has no code of its own: everything is in its tests. See
// docs/interop.md (section HTTP and row encoding).
package rows
