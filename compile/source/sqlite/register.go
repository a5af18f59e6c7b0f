// Package sqlite reads SQLite tables and queries as row sources for the
// compiler (modernc.org/sqlite: pure Go, no cgo). Importing it registers
// the "sqlite" format with package source.
package sqlite

import "github.com/lutkit/lutkit/compile/source"

func init() {
	source.RegisterFormat("sqlite", []string{".db", ".sqlite", ".sqlite3"}, openSQLite)
}
