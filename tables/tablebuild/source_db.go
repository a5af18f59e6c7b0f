package tablebuild

import (
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
)

// A .lut table's source may be a query on a database (postgres or mysql
// with query, see source.Options) instead of a file: it has no path, and
// as nothing tells whether its rows changed, the table is compiled
// again on every build (which, the compiler being deterministic, gives
// the same artifact when they did not).

// sourceDigest identifies a source's content for the manifest: a file's
// SHA-256 and size; for a database, its connection string (which holds
// no password: the source refuses one) and no digest.
func sourceDigest(s *SourceConfig) (tables.SourceDigest, error) {
	if s.IsDatabase() {
		return tables.SourceDigest{Path: s.LUT.Postgres + s.LUT.MySQL}, nil
	}
	sum, size, err := fsutil.FileSHA256(s.Resolved)
	return tables.SourceDigest{Path: s.Path, SHA256: sum, Size: size}, err
}

// name names the source in errors: its resolved path or its connection.
func sourceName(s *SourceConfig) string {
	if s.IsDatabase() {
		return s.LUT.Database() + " " + s.LUT.Postgres + s.LUT.MySQL
	}
	return s.Resolved
}
