// Package tablebuild is the build side of a fleet's set of tables: it
// reads the declarative list of tables (tables.yaml: LoadConfig), builds
// the tables that changed into versioned, content-addressed artifacts
// (Build, used by "lut build") and writes the manifest (tables.Manifest)
// that names them. It links every compiler (compile, compile/iptable and
// every source format); programs that only serve tables import package
// tables instead.
//
// # tables.yaml
//
//	version: 1
//	tables:
//	  - name: customers          # letters, digits, '_', '.', '-'
//	    kind: lut                # lut (default) or mmdb
//	    sources: [customers.csv] # relative to tables.yaml; a .lut has one
//	    key: Index               # or a list for a composite key
//	    columns: [Index, Email]  # optional; default all
//	    fold_case: false
//	    on_duplicate: error      # error, first or last
//	    skip_bad_rows: false
//	    column_types: {price: number}  # number, bool or json (default text)
//	    source_types: false      # the types a PostgreSQL, MySQL, Parquet, Arrow or JSON source declares
//	    delta: false             # also publish each new version as a delta (as lut build --delta)
//	    delta_chain: 8           # versions with a delta before a full one (--delta-chain)
//	  - name: ports              # a range table (docs/matching.md)
//	    sources: [ports.csv]
//	    match: range             # exact (default) or range
//	    range_columns: [from, to] # inclusive integers or IPv4 addresses; the key
//	    overlap: narrowest       # error (default), narrowest or first
//	  - name: agents             # a pattern table (docs/matching.md)
//	    sources: [agents.csv]
//	    key: pattern
//	    match: pattern           # or wildcard
//	    strict_patterns: true    # a pattern run on every lookup is an error (--strict-patterns)
//	  - name: leases             # a time-bounded table
//	    sources: [leases.csv]
//	    key: ip
//	    valid_from: start        # RFC 3339 or epoch seconds; empty: open
//	    valid_to: end            # exclusive; with match: range too, a range table bounded in time
//	  - name: assets
//	    sources:
//	      - path: inventory.db   # a source may be a mapping with options:
//	        sqlite_table: assets # format, delimiter, quote, header, sqlite_table, sqlite_query, nested
//	    key: id
//	  - name: owners
//	    sources:
//	      - postgres: postgres://lut@db/cmdb   # or mysql: lut@tcp(db:3306)/cmdb; no path
//	        query: SELECT id, owner FROM assets
//	        password_file: /etc/lutkit/db.pw   # or PGPASSWORD / MYSQL_PWD
//	    key: id                  # compiled again on every build
//	  - name: geo
//	    kind: mmdb
//	    profile: city            # city, asn or custom
//	    database_type: ...       # description, languages, ip_version,
//	                             # record_size, custom_key, default_location,
//	                             # ipv4_aliases (auto, on or off)
//	    sources:                 # layered in order
//	      - path: ranges.csv
//	        type: ranges         # ranges, networks, list or mmdb (guessed)
//	        start_column: start
//	        end_column: end
//	        fields: ["country.iso_code=cc", "x_internal.site=site"]
//	        set: ["x_internal.source=inventory"]
//	        merge: replace       # replace, top or deep
//
// The options of a table and of each of its sources are the compilers'
// own specs: compile.Options and source.Options for a .lut table,
// iptable.Options and iptable.Source for an .mmdb table. Each key is the
// json name of a field of the spec, read by the field's type (typed
// values by their UnmarshalText), and each spec checks itself (its
// Validate), exactly as for the "lut compile" flags, which decode into
// the same specs. The file is read with internal/config's walker.
// Validation reports every problem at once, each naming the file, line,
// column, table and field (ConfigError).
//
// # Builds
//
// Build compiles the tables that changed (their source digests or options
// differ from the previous manifest's) in parallel, writes each to
// NAME-DIGEST.lut or NAME-DIGEST.mmdb (DIGEST: the first 16 hex digits of
// the artifact's SHA256) after a full verification, and renames
// MANIFEST.json into place last, only if every table succeeded. A build
// killed at any point leaves the previous manifest, naming complete
// artifacts only.
//
// The nodes serve the result with package tables (tables.Open), which
// does not link the compilers; see README.md in package tables for
// deployment.
package tablebuild
