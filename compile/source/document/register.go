// Package document reads JSON, NDJSON and YAML documents as row sources
// for the compiler. Importing it registers the "json", "ndjson" and
// "yaml" formats with package source.
//
// A document holds rows in one of three shapes:
//
//   - a dictionary, a JSON or YAML object mapping keys to values
//     ({"10.0.0.1": "db", ...}, as Logstash's translate filter reads): each
//     entry is a row whose column "key" is the entry's key; a scalar
//     value goes to a column "value", an object value's fields are
//     columns of their own;
//   - an array (a YAML sequence) of objects, one row each;
//   - NDJSON (JSON lines): one object per line, one row each. Each line
//     is a JSON text of its own: a line that is not one object is a bad
//     row at that line, and reading goes on with the next one. Blank
//     lines are skipped.
//
// The columns are the fields in the order they first appear in the
// document ("key" first for a dictionary), found by a first pass over the
// file, or the Options.Header list (one pass; a field not in it is a bad
// row). A row that lacks a field has it empty; null is empty too, as
// SQLite's NULL is. A string is its text, a number its text as written
// (1.50 stays 1.50), true and false their names. Nested values follow
// Options.Nested: flattened to dotted columns ("geo.city"), or kept as
// compact JSON text. An array is always kept as JSON text.
//
// JSON and NDJSON stream: the reader holds one token and the row under
// construction, never the document, so a dictionary of millions of
// entries compiles in bounded memory. YAML cannot be read that way: the
// YAML reader parses the whole document into a node tree first (see
// yamlReader). Errors name file:line:column, the byte column (a YAML
// syntax error file:line: the YAML library names no column).
package document

import (
	"github.com/lutkit/lutkit/compile/source"
)

func init() {
	source.RegisterFormat("json", []string{".json", ".json.gz"}, func(path string, opts source.Options) (source.Reader, error) {
		return openJSON(path, opts, false)
	})
	source.RegisterFormat("ndjson", []string{".ndjson", ".jsonl", ".ndjson.gz", ".jsonl.gz"}, func(path string, opts source.Options) (source.Reader, error) {
		return openJSON(path, opts, true)
	})
	source.RegisterFormat("yaml", []string{".yaml", ".yml", ".yaml.gz", ".yml.gz"}, openYAML)
}

// Column names of a dictionary's rows.
const (
	KeyColumn   = "key"
	ValueColumn = "value"
)

// maxDepth is how deeply values may nest.
const maxDepth = 1000
