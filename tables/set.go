package tables

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// DataVerify selects the full-data check a new file passes before it is
// published. The structure check (header, section table, schema, search
// tree bounds) always runs.
type DataVerify int

// Data verification levels.
const (
	// DataVerifyFull (the default) checks the file's SHA256 against the
	// manifest (in manifest mode) and every checksum and record
	// (reader.Table.Verify, mmdb.Reader.Verify). It reads the whole file.
	DataVerifyFull DataVerify = iota
	// DataVerifyDigest only checks the SHA256 against the manifest.
	DataVerifyDigest
	// DataVerifyNone publishes after the structure check: a swap then
	// costs a few system calls whatever the table's size.
	DataVerifyNone
)

func (d DataVerify) String() string {
	switch d {
	case DataVerifyFull:
		return "full"
	case DataVerifyDigest:
		return "digest"
	case DataVerifyNone:
		return "none"
	}
	return fmt.Sprintf("DataVerify(%d)", int(d))
}

// DefaultPollInterval is how often a Set re-checks its directory when
// Options.PollInterval is zero.
const DefaultPollInterval = time.Second

// Options configure Open.
type Options struct {
	// DataVerify is the full-data check of new files (default: full).
	DataVerify DataVerify
	// PollInterval is how often the directory is re-checked, in addition
	// to file system notifications (and instead of them where those are
	// unavailable). Zero means DefaultPollInterval; a negative value
	// disables polling.
	PollInterval time.Duration
	// NoNotify disables file system notifications (fsnotify): changes are
	// found by polling only.
	NoNotify bool
	// NoWatch disables watching altogether: the set changes only when
	// Reload is called.
	NoWatch bool
	// Prefetch asks the kernel to read each new .lut table's hash and slot
	// sections before it is published.
	Prefetch bool
	// Logger receives swaps (Info) and rejections (Warn). Nil means
	// slog.Default().
	Logger *slog.Logger
	// Remote configures a set opened from a remote manifest (an
	// http://, https:// or s3:// path). PollInterval is then how often
	// the store is checked (DefaultRemotePollInterval when zero).
	Remote RemoteOptions
}

// Set is a live set of tables: a directory (with or without a manifest)
// that is watched and swapped as a whole. See the package documentation.
type Set struct {
	cur atomic.Pointer[Snapshot]

	path         string // as given to Open
	dir          string // the directory holding the tables
	manifestPath string // the manifest in manifest mode ("" to decide per load)
	opts         Options
	log          *slog.Logger

	// names assigns every table name a stable index for Handles.
	namesMu sync.Mutex
	names   atomic.Pointer[map[string]int]

	loadMu       sync.Mutex // serialises loads
	lastPrint    string     // fingerprint of the last state loaded or rejected
	rejectedFile map[string]fileID

	gen        atomic.Uint64
	swaps      atomic.Uint64
	rejections atomic.Uint64
	checks     atomic.Uint64

	statsMu    sync.Mutex
	lastReject string
	lastRejAt  time.Time
	lastLoad   time.Duration
	tableRej   map[string]*tableRejection
	faults     map[string]*tableFault
	missing    map[string]struct{} // tables kept while their file is gone

	// mapped holds every opened entry until it is unmapped, so that a
	// memory fault can be traced back to its table (fault.go); recheck
	// asks the next load to look at the directory again after a damage.
	mappedMu sync.Mutex
	mapped   map[*entry]struct{}
	recheck  atomic.Bool

	// remote keeps the cache of a remote set in step with its store (nil
	// for a local set); remoteMu serialises its checks, remoteCancel
	// aborts one in flight at Close.
	remote       *remote
	remoteMu     sync.Mutex
	remoteCtx    context.Context
	remoteCancel context.CancelFunc

	// watchedDir identifies the directory file notifications watch
	// (written by the watch goroutine only, after startWatch).
	watchedDir fileID

	// onPublish is called after each publish (OnPublish).
	onPublish atomic.Pointer[func()]

	trigger  chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
	closed   atomic.Bool
	notifyOn atomic.Bool
}

type tableRejection struct {
	count  uint64
	reason string
	at     time.Time
}

// emptySnapshot is what Acquire returns after Close: no tables. It is never
// retired.
var emptySnapshot = &Snapshot{byName: map[string]*entry{}}

// Open opens a live set at path: a directory holding MANIFEST.json (a
// directory built by Build), a manifest file, or a directory of NAME.lut
// and NAME.mmdb files. It loads the set, then, unless opts.NoWatch,
// watches for changes until Close.
//
// Open fails if a manifest cannot be loaded as a whole; in a directory
// without a manifest, files that fail to open are rejected (logged and
// counted, see Stats) and the others are loaded.
//
// A remote path (https://HOST/PREFIX/MANIFEST.json, http://...,
// s3://BUCKET/PREFIX/) is fetched into opts.Remote.CacheDir and served
// from there; see the package documentation.
func Open(path string, opts Options) (*Set, error) {
	if IsRemote(path) {
		return openRemote(path, opts)
	}
	return openLocal(path, opts, nil)
}

// openLocal opens a local path; r is the remote source that fills it, or
// nil.
func openLocal(path string, opts Options, r *remote) (*Set, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	s := &Set{
		path: path, opts: opts, log: opts.Logger,
		rejectedFile: map[string]fileID{},
		tableRej:     map[string]*tableRejection{},
		faults:       map[string]*tableFault{},
		missing:      map[string]struct{}{},
		mapped:       map[*entry]struct{}{},
		trigger:      make(chan struct{}, 1),
		done:         make(chan struct{}),
		remote:       r,
	}
	s.remoteCtx, s.remoteCancel = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = slog.Default()
	}
	if fi.IsDir() {
		s.dir = path
	} else {
		s.dir = filepath.Dir(path)
		s.manifestPath = path
	}
	names := map[string]int{}
	s.names.Store(&names)
	s.cur.Store(&Snapshot{byName: map[string]*entry{}})
	if err := s.load(true); err != nil && s.inManifestMode() {
		s.retire(s.cur.Load())
		return nil, err
	}
	switch {
	case opts.NoWatch:
	case r != nil:
		s.startRemote()
	default:
		s.startWatch()
	}
	return s, nil
}

// Close stops watching and drops the set's reference to the current
// snapshot: its tables are unmapped once every acquired snapshot is
// released. Acquire then returns an empty snapshot.
func (s *Set) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.done)
	s.remoteCancel()
	s.wg.Wait()
	if s.remote != nil {
		// No check runs after this (checkRemote sees closed): the
		// cache directory's lock goes.
		s.remoteMu.Lock()
		s.remote.close()
		s.remoteMu.Unlock()
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	old := s.cur.Swap(emptySnapshot)
	s.retire(old)
	return nil
}

// Dir returns the directory the set is loaded from.
func (s *Set) Dir() string { return s.dir }

// Reload checks the directory (or, for a remote set, the store) now and
// publishes any change, as the watcher does. It returns the reason a new
// manifest or file was rejected, or the store could not be checked (the
// old version then stays live), or nil.
func (s *Set) Reload() error {
	if s.closed.Load() {
		return errors.New("tables: set is closed")
	}
	if s.remote != nil {
		return s.checkRemote()
	}
	return s.load(true)
}

// Acquire returns the current snapshot with a reference taken: its tables
// stay mapped until Release. It costs an atomic load and an atomic add.
// Acquire never blocks and never returns nil.
func (s *Set) Acquire() *Snapshot {
	for {
		sn := s.cur.Load()
		if sn.refs.Add(1)&snapRetired == 0 {
			return sn
		}
		// Retired between the load and the add: a newer snapshot is
		// already published.
		sn.Release()
	}
}

// Version returns the version of a snapshot of the set: the SHA256 of
// its manifest as published ("" without a manifest), and where that
// manifest came from (its path, or its URL for a remote set).
func (s *Set) Version(sn *Snapshot) (digest, source string) {
	if s.remote != nil {
		return s.remote.published(sn.manifestDigest), s.remote.st.location()
	}
	return sn.manifestDigest, sn.source
}

// Generation returns the generation of the current snapshot: 1 for the
// first load, incremented by every publish.
func (s *Set) Generation() uint64 { return s.cur.Load().gen }

// OnPublish makes fn be called after every version the set publishes
// from now on (a swap), before the next load begins: Acquire in fn
// returns that version. fn runs on the goroutine that loaded it (the
// watcher, or the caller of Reload) and must not call Reload. A later
// call replaces fn; nil stops the calls.
func (s *Set) OnPublish(fn func()) {
	if fn == nil {
		s.onPublish.Store(nil)
		return
	}
	s.onPublish.Store(&fn)
}

// publish makes sn current and retires the previous snapshot. Called with
// loadMu held.
func (s *Set) publish(sn *Snapshot) {
	old := s.cur.Swap(sn)
	s.retire(old)
	s.swaps.Add(1)
}

// retire drops the set's own reference to sn.
func (s *Set) retire(sn *Snapshot) {
	if sn == nil || sn == emptySnapshot {
		return
	}
	if sn.refs.Add(snapRetired) == snapRetired {
		sn.free()
	}
}

const (
	snapRetired = int64(1) << 60
	snapFreed   = int64(1) << 61
)

// Snapshot is one consistent version of the whole set: every table of one
// manifest (or one scan of a directory). Take one with Set.Acquire, look
// up in as many of its tables as needed, then Release it. The tables a
// snapshot returns must not be closed, and must not be used after
// Release.
type Snapshot struct {
	// refs counts acquired references; snapRetired is added when the
	// snapshot stops being current. The snapshot's tables are released
	// when refs drops back to exactly snapRetired.
	refs atomic.Int64

	gen      uint64
	loadedAt time.Time
	source   string // manifest path, or the directory
	// manifestDigest is the SHA256 of the manifest's bytes ("" without
	// a manifest).
	manifestDigest string
	byID           []*entry
	byName         map[string]*entry
	list           []*entry // sorted by name
}

// Release drops the reference taken by Acquire. It costs an atomic add.
func (sn *Snapshot) Release() {
	if sn.refs.Add(-1) == snapRetired {
		sn.free()
	}
}

func (sn *Snapshot) free() {
	if !sn.refs.CompareAndSwap(snapRetired, snapRetired|snapFreed) {
		return // a late Acquire's undo will retry
	}
	for _, e := range sn.list {
		e.release()
	}
}

// Generation returns the snapshot's generation (see Set.Generation).
func (sn *Snapshot) Generation() uint64 { return sn.gen }

// LoadedAt returns when the snapshot was published.
func (sn *Snapshot) LoadedAt() time.Time { return sn.loadedAt }

// LUT returns the named .lut table, or nil if the snapshot has no such
// .lut table or its version is damaged (see Set.Fault). Lookups on it are lock-free; Views it returns are valid
// until the snapshot is released.
func (sn *Snapshot) LUT(name string) *reader.Table {
	if e := sn.byName[name]; e != nil && !e.damaged.Load() {
		return e.lut
	}
	return nil
}

// MMDB returns the named .mmdb table, or nil if the snapshot has no such
// .mmdb table or its version is damaged. Values its lookups return alias the mapping and are valid
// until the snapshot is released.
func (sn *Snapshot) MMDB(name string) *mmdb.Reader {
	if e := sn.byName[name]; e != nil && !e.damaged.Load() {
		return e.mm
	}
	return nil
}

// Names returns the names of the snapshot's tables, sorted.
func (sn *Snapshot) Names() []string {
	out := make([]string, len(sn.list))
	for i, e := range sn.list {
		out[i] = e.name
	}
	return out
}

// Table returns the description of the named table.
func (sn *Snapshot) Table(name string) (TableStats, bool) {
	e := sn.byName[name]
	if e == nil {
		return TableStats{}, false
	}
	return e.stats(), true
}

// Handle names one table of a Set across versions. Resolving a Handle in a
// snapshot is an array index, cheaper than a lookup by name.
type Handle struct {
	set  *Set
	id   int
	name string
}

// Table returns a handle on the named table. The table need not exist
// yet: the handle resolves to nil until it does.
func (s *Set) Table(name string) *Handle {
	return &Handle{set: s, id: s.nameID(name), name: name}
}

// nameID returns the stable index of a table name, assigning one if
// needed.
func (s *Set) nameID(name string) int {
	if id, ok := (*s.names.Load())[name]; ok {
		return id
	}
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	old := *s.names.Load()
	if id, ok := old[name]; ok {
		return id
	}
	m := make(map[string]int, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	id := len(old)
	m[name] = id
	s.names.Store(&m)
	return id
}

// Name returns the table name.
func (h *Handle) Name() string { return h.name }

func (h *Handle) entry(sn *Snapshot) *entry {
	if h.id < len(sn.byID) {
		return sn.byID[h.id]
	}
	return sn.byName[h.name]
}

// LUT returns the handle's .lut table in sn, or nil (absent or damaged).
func (h *Handle) LUT(sn *Snapshot) *reader.Table {
	if e := h.entry(sn); e != nil && !e.damaged.Load() {
		return e.lut
	}
	return nil
}

// MMDB returns the handle's .mmdb table in sn, or nil (absent or damaged).
func (h *Handle) MMDB(sn *Snapshot) *mmdb.Reader {
	if e := h.entry(sn); e != nil && !e.damaged.Load() {
		return e.mm
	}
	return nil
}

// Get looks key up in the current version of the .lut table and copies
// the row into row (see reader.Table.Get). It reports false when the key
// or the table is absent. It is lock-free.
func (h *Handle) Get(key []byte, row *reader.Row) bool {
	sn := h.set.Acquire()
	t := h.LUT(sn)
	ok := t != nil && t.Get(key, row)
	sn.Release()
	return ok
}

// LookupRecord looks ip up in the current version of the .mmdb table and
// decodes its whole record (a copy, valid after the call). found is false
// when the address or the table is absent.
func (h *Handle) LookupRecord(ip netip.Addr) (prefix netip.Prefix, record any, found bool, err error) {
	sn := h.set.Acquire()
	defer sn.Release()
	m := h.MMDB(sn)
	if m == nil {
		return netip.Prefix{}, nil, false, nil
	}
	match, rec, err := m.LookupRecord(ip)
	if err != nil {
		return netip.Prefix{}, nil, false, fmt.Errorf("table %s: %w", h.name, err)
	}
	return match.Prefix(), rec, match.Found(), nil
}

// entry is one opened table file, shared by every snapshot that includes
// it.
type entry struct {
	refs atomic.Int64

	name string
	kind Kind
	path string
	id   fileID
	lut  *reader.Table
	mm   *mmdb.Reader

	digest        string
	size          int64
	rows          int64
	formatVersion string
	buildTime     time.Time
	gen           uint64
	loadedAt      time.Time
	openDur       time.Duration
	verifyDur     time.Duration
	verify        DataVerify

	// damaged is set when the file changed under the mapping (a fault
	// or the watcher saw it, fault.go): lookups then skip this version.
	// damageReason is written once, before damaged, under statsMu.
	damaged      atomic.Bool
	damageReason string
	set          *Set // that registered the entry (nil until then)
}

func (e *entry) acquire() { e.refs.Add(1) }

func (e *entry) release() {
	if e.refs.Add(-1) != 0 {
		return
	}
	if e.set != nil {
		e.set.unregister(e)
	}
	if e.lut != nil {
		e.lut.Close()
	}
	if e.mm != nil {
		e.mm.Close()
	}
}

// Stats are counters and the state of a Set, for monitoring.
type Stats struct {
	// Generation of the current snapshot; PublishedAt is when it was
	// published.
	Generation  uint64
	PublishedAt time.Time
	// Mode is "manifest" or "directory"; Source the manifest or the
	// directory.
	Mode   string
	Source string
	// Swaps counts publishes (including the first load).
	Swaps uint64
	// Rejections counts files and manifests rejected; LastRejection is
	// the latest reason.
	Rejections      uint64
	LastRejection   string
	LastRejectionAt time.Time
	// Checks counts loads (a poll, a notification or Reload) that looked
	// at the directory.
	Checks uint64
	// LastLoad is how long the latest publish took, from the start of the
	// check to the pointer store (opening and verifying included).
	LastLoad time.Duration
	// Notify reports whether file system notifications are active
	// (otherwise changes are found by polling).
	Notify bool
	// Version is the SHA256 of the manifest the current snapshot was
	// loaded from, as published ("" for a directory without a manifest);
	// VersionSource is where it came from: the manifest's path or URL.
	Version       string
	VersionSource string
	// Remote describes the store of a remote set (nil for a local one).
	Remote *RemoteStats
	Tables []TableStats
	// Rejected lists tables with rejections, including tables not (or no
	// longer) in the current snapshot.
	Rejected []TableRejections
	// Faults lists tables whose lookups faulted or whose file changed in
	// place, including tables no longer damaged.
	Faults []TableFaults
}

// TableFaults count the memory faults of one table's lookups (a file
// truncated or rewritten under its mapping).
type TableFaults struct {
	Name string
	// Faults counts the faults caught (Set.Fault), every version of the
	// table included.
	Faults uint64
	// LastReason is the latest reason a version was marked damaged (a
	// fault, or the file seen changed in place); LastAt when.
	LastReason string
	LastAt     time.Time
}

// TableStats describe one table of the current snapshot.
type TableStats struct {
	Name string
	Kind Kind
	File string
	// Digest is the SHA256 of the file as listed in the manifest, or as
	// computed on load in a directory without a manifest ("" when
	// DataVerify is none there).
	Digest        string
	Size          int64
	Rows          int64 // rows of a .lut, search tree nodes of an .mmdb
	FormatVersion string
	BuildTime     time.Time
	// Generation is the set generation at which this version of the
	// table was published; LoadedAt when.
	Generation uint64
	LoadedAt   time.Time
	// OpenDuration is the structure check (open and map); VerifyDuration
	// the full-data check (digest and data), zero when DataVerify is none.
	OpenDuration   time.Duration
	VerifyDuration time.Duration
	DataVerify     DataVerify
	// Damaged reports that the file changed under this version's
	// mapping (truncated or rewritten in place): its lookups miss until
	// a good new version is published. DamageReason says why.
	Damaged      bool
	DamageReason string
	// Missing reports that the file is gone (removed, or its directory):
	// the version mapped stays live until a new file is published.
	Missing bool
}

// TableRejections count the rejected versions of one table.
type TableRejections struct {
	Name       string
	Rejections uint64
	LastReason string
	LastAt     time.Time
}

func (e *entry) stats() TableStats {
	return TableStats{
		Name: e.name, Kind: e.kind, File: e.path, Digest: e.digest, Size: e.size,
		Rows: e.rows, FormatVersion: e.formatVersion, BuildTime: e.buildTime,
		Generation: e.gen, LoadedAt: e.loadedAt, OpenDuration: e.openDur,
		VerifyDuration: e.verifyDur, DataVerify: e.verify,
	}
}

// Stats returns the set's counters and the description of every table of
// the current snapshot.
func (s *Set) Stats() Stats {
	sn := s.Acquire()
	defer sn.Release()
	st := Stats{
		Generation: sn.gen, PublishedAt: sn.loadedAt, Source: sn.source,
		Swaps: s.swaps.Load(), Rejections: s.rejections.Load(), Checks: s.checks.Load(),
		Notify: s.notifyOn.Load(),
	}
	st.Version, st.VersionSource = s.Version(sn)
	if s.remote != nil {
		rs := s.remote.Stats()
		st.Remote = &rs
	}
	st.Mode = "directory"
	if filepath.Base(sn.source) == ManifestName || sn.source == s.manifestPath && s.manifestPath != "" {
		st.Mode = "manifest"
	}
	s.statsMu.Lock()
	for _, e := range sn.list {
		ts := e.stats()
		ts.Damaged, ts.DamageReason = e.damaged.Load(), e.damageReason
		_, ts.Missing = s.missing[e.name]
		st.Tables = append(st.Tables, ts)
	}
	st.LastRejection, st.LastRejectionAt, st.LastLoad = s.lastReject, s.lastRejAt, s.lastLoad
	for name, r := range s.tableRej {
		st.Rejected = append(st.Rejected, TableRejections{Name: name, Rejections: r.count, LastReason: r.reason, LastAt: r.at})
	}
	for name, f := range s.faults {
		st.Faults = append(st.Faults, TableFaults{Name: name, Faults: f.faults, LastReason: f.reason, LastAt: f.at})
	}
	s.statsMu.Unlock()
	sort.Slice(st.Rejected, func(i, j int) bool { return st.Rejected[i].Name < st.Rejected[j].Name })
	sort.Slice(st.Faults, func(i, j int) bool { return st.Faults[i].Name < st.Faults[j].Name })
	return st
}

// WriteText writes the stats in a human-readable form.
func (st Stats) WriteText(w io.Writer) {
	fmt.Fprintf(w, "generation %d (%s %s), published %s, %d swaps, %d rejections\n",
		st.Generation, st.Mode, st.Source, st.PublishedAt.Format(time.RFC3339), st.Swaps, st.Rejections)
	for _, t := range st.Tables {
		state := ""
		switch {
		case t.Damaged:
			state = "  DAMAGED: " + t.DamageReason
		case t.Missing:
			state = "  (file gone, version mapped kept)"
		}
		fmt.Fprintf(w, "  %-20s %-4s %10d rows  gen %-4d %s%s\n", t.Name, t.Kind, t.Rows, t.Generation, filepath.Base(t.File), state)
	}
}

// Local is a per-goroutine cache of the current snapshot for hot loops:
// Snapshot costs one atomic load while the set is unchanged, instead of
// the atomic add of Acquire and of Release. The price is that a Local pins
// the snapshot it last returned until its next Snapshot call after a swap,
// or Close: an idle Local keeps an old version mapped. A Local is not safe
// for concurrent use; give each worker goroutine its own.
type Local struct {
	set  *Set
	snap *Snapshot
}

// NewLocal returns a Local for one goroutine.
func (s *Set) NewLocal() *Local { return &Local{set: s} }

// Snapshot returns the current snapshot, valid until the next call to
// Snapshot or Close on this Local. It does not need to be released.
func (l *Local) Snapshot() *Snapshot {
	if cur := l.set.cur.Load(); cur != l.snap {
		if l.snap != nil {
			l.snap.Release()
		}
		l.snap = l.set.Acquire()
	}
	return l.snap
}

// Close releases the pinned snapshot.
func (l *Local) Close() {
	if l.snap != nil {
		l.snap.Release()
		l.snap = nil
	}
}
