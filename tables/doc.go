// Package tables manages a fleet's set of tables end to end: it reads the
// declarative list of tables (tables.yaml), builds all of them into
// versioned, content-addressed artifacts with a manifest (Build, used by
// "lut build"), and keeps a live set in a running process that loads,
// watches and swaps new versions without ever blocking a lookup, losing
// one, or serving a half-written file (Open, Set, Snapshot).
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
//	  - name: assets
//	    sources:
//	      - path: inventory.db   # a source may be a mapping with options:
//	        sqlite_table: assets # format, delimiter, header, sqlite_table, sqlite_query
//	    key: id
//	  - name: geo
//	    kind: mmdb
//	    profile: city            # city, asn or custom
//	    database_type: ...       # description, languages, ip_version,
//	                             # record_size, custom_key, default_location
//	    sources:                 # layered in order
//	      - path: ranges.csv
//	        type: ranges         # ranges, networks, list or mmdb (guessed)
//	        start_column: start
//	        end_column: end
//	        fields: ["country.iso_code=cc", "x_internal.site=site"]
//	        set: ["x_internal.source=inventory"]
//	        merge: replace       # replace, top or deep
//
// Validation reports every problem at once, each naming the file, line,
// table and field (ConfigError).
//
// # Builds and deployment
//
// Build compiles the tables that changed (their source digests or options
// differ from the previous manifest's) in parallel, writes each to
// NAME-DIGEST.lut or NAME-DIGEST.mmdb (DIGEST: the first 16 hex digits of
// the artifact's SHA256) after a full verification, and renames
// MANIFEST.json into place last, only if every table succeeded. A build
// killed at any point leaves the previous manifest, naming complete
// artifacts only.
//
// Deploying is copying the directory to the nodes with the manifest last:
// artifact names never change meaning, so copying new ones next to the old
// is harmless, and the manifest's rename publishes them all at once. See
// README.md in this directory.
//
// # Live set
//
//	set, err := tables.Open("/var/lib/lutkit/dist", tables.Options{})
//	...
//	defer set.Close()
//	snap := set.Acquire()
//	if t := snap.LUT("customers"); t != nil {
//		v, ok := t.Lookup(key)
//		...
//	}
//	if m := snap.MMDB("geo"); m != nil { ... }
//	snap.Release()
//
// A Set opens a directory holding MANIFEST.json (the manifest is loaded as
// one unit), a manifest file, or a directory of NAME.lut and NAME.mmdb
// files (each file is the table NAME, independently; drop a new version in
// with an atomic rename). The directory is watched with fsnotify and
// polled (Options.PollInterval) as a fallback. Each change is opened, its
// structure checked, optionally fully verified (Options.DataVerify), and
// published with one atomic pointer store. A manifest or file that fails is
// rejected: logged with log/slog with its reason, counted (Stats), and the
// previous version stays live.
//
// # Thread safety
//
// Every method of Set, Snapshot and Handle is safe for concurrent use, and
// none of them blocks on a load: Acquire is an atomic load and an atomic
// add, Release an atomic add, and resolving a table is a map lookup (by
// name) or an array index (by Handle). Loads are serialised among
// themselves and never hold anything readers wait on.
//
// A Snapshot is immutable. Every table it returns stays mapped until the
// snapshot is released by every goroutine that acquired it, even if newer
// versions were published meanwhile; the old version is unmapped by the
// last Release. Views and Values from lookups alias the mapping and are
// valid only until Release. Callers must not Close the tables a snapshot
// returns, and must not use them after Release. Handle.Get copies the row
// and needs no snapshot.
package tables
