// Package tables is the run side of a fleet's set of tables: it keeps a
// live set in a running process that loads, watches and swaps new
// versions without ever blocking a lookup, losing one, or serving a
// half-written file (Open, Set, Snapshot); it reads and checks manifests
// (ReadManifest) and verifies a built directory against its manifest
// (VerifyDir, used by "lut verify DIR").
//
// It depends on the readers (reader, reader/mmdb) only: a program that
// serves tables links no compiler. Declaring tables (tables.yaml),
// building them ("lut build") and writing manifests is the job of package
// tables/tablebuild.
//
// # Manifests and deployment
//
// A built directory holds NAME-DIGEST.lut and NAME-DIGEST.mmdb artifacts
// (DIGEST: the first 16 hex digits of the artifact's SHA256; see
// ArtifactName) and MANIFEST.json (Manifest), which names every artifact
// with its size, digest, row count and format version. Deploying is
// copying the directory to the nodes with the manifest last: artifact
// names never change meaning, so copying new ones next to the old is
// harmless, and the manifest's rename publishes them all at once. See
// README.md in this directory.
//
// # Remote sets
//
// Open also takes a manifest in a store: https://HOST/PREFIX/MANIFEST.json
// (or http://) or s3://BUCKET/PREFIX/ (S3 and S3-compatible stores), with
// Options.Remote (a cache directory is required). The set polls the
// manifest with conditional requests, downloads the artifacts its cache
// lacks (size limit, timeout, retries with backoff and jitter, resumed
// after a break), verifies each one's size, SHA256 and structure, and
// switches to a version only when all of its artifacts are verified; a
// version with any bad artifact is rejected whole. The cache keeps the
// current and RemoteOptions.Keep previous versions. Opened while the
// store is unreachable, the set serves the cache's last verified version
// and reports it stale (Stats().Remote). Stats().Version is the SHA256 of
// the manifest served, as published.
//
// A manifest entry may name a delta (ManifestDelta, format/DELTA.md)
// beside the full artifact: a set whose cache holds the delta's base
// downloads the delta, rebuilds the artifact from the base and checks it
// as it checks a download (size, the manifest's SHA256, structure, rows);
// without the base, or when any step fails, it downloads the full
// artifact (RemoteStats.DeltasApplied, DeltaFallbacks).
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
// A table whose file disappears (removed, or its whole directory) keeps
// its version: the mapping of an unlinked file stays valid, the set is not
// published without it, and the disappearance is a rejection
// (TableStats.Missing while it lasts). A file truncated or rewritten in
// place, which faults when its mapping is read past its new end, is
// marked damaged by Set.Fault (given the value recovered from the fault of
// a goroutine running with debug.SetPanicOnFault) or by the watcher when
// it sees the file changed in place: lookups on a damaged version miss
// (LUT and MMDB return nil; TableStats.Damaged, Stats().Faults) until a
// good version is published.
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
