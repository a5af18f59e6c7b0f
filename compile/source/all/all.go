// Package all links every source format into a program: importing it for
// its side effects makes source.Open read SQLite, Parquet, Arrow, JSON,
// NDJSON and YAML files and PostgreSQL and MySQL/MariaDB queries besides
// CSV and TSV, and source.NewWriter write Parquet.
package all

import (
	_ "github.com/lutkit/lutkit/compile/source/columnar" // parquet, arrow
	_ "github.com/lutkit/lutkit/compile/source/document" // json, ndjson, yaml
	_ "github.com/lutkit/lutkit/compile/source/sqldb"    // postgres, mysql
	_ "github.com/lutkit/lutkit/compile/source/sqlite"   // sqlite
)
