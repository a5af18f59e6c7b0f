package tablebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/iptable"
	"github.com/lutkit/lutkit/compile/source"
	_ "github.com/lutkit/lutkit/compile/source/all" // every source format
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
)

// Options configure Build.
type Options struct {
	// Jobs bounds how many tables compile at once. Zero means the number
	// of CPUs.
	Jobs int
	// Force rebuilds every table, changed or not. A table rebuilt to the
	// bytes of its previous version (as is one whose options changed
	// nothing in it) keeps that version's build time and delta.
	Force bool
	// BuildTime is recorded in .lut headers and in the manifest. Zero
	// records no time in .lut headers (reproducible output) and the wall
	// clock in the manifest. See compile.BuildTimeFromEnv.
	BuildTime time.Time
	// Prune removes artifacts named by neither the new nor the previous
	// manifest once the new manifest is in place. The previous ones are
	// kept for nodes still switching over.
	Prune bool
	// Delta publishes every rebuilt .lut table also as a delta against
	// its previous version (format/DELTA.md), for nodes that hold that
	// version; the full artifact is published too. DeltaChain bounds the
	// consecutive versions of a table published with a delta (default
	// DefaultDeltaChain): the next one is published full only.
	Delta      bool
	DeltaChain int
	// Report, if set, is called (from any goroutine, one call at a time)
	// as each table finishes.
	Report func(TableResult)
}

// Status is the outcome of one table in a build.
type Status string

// Statuses.
const (
	StatusBuilt     Status = "built"
	StatusUnchanged Status = "unchanged"
	StatusFailed    Status = "failed"
)

// TableResult is the outcome of one table.
type TableResult struct {
	Name    string
	Kind    tables.Kind
	Status  Status
	Entry   *tables.ManifestTable // nil when failed
	Err     error                 // names the table and, where known, the file
	Elapsed time.Duration
}

// Result is the outcome of a build.
type Result struct {
	Tables []TableResult // in configuration order
	// Manifest is the manifest written, or nil when a table failed (the
	// previous manifest is then left in place).
	Manifest *tables.Manifest
	// Pruned lists the artifacts removed by Options.Prune.
	Pruned []string
}

// Failed returns the results of the tables that failed.
func (r *Result) Failed() []TableResult {
	var out []TableResult
	for _, t := range r.Tables {
		if t.Status == StatusFailed {
			out = append(out, t)
		}
	}
	return out
}

// Build compiles every table of cfg that changed into outDir and then
// writes outDir/MANIFEST.json.
//
// A table is unchanged, and not rebuilt, when the previous manifest in
// outDir lists it with the same options digest and source digests and its
// artifact is still present with the recorded size. Tables compile in
// parallel (Options.Jobs). Each artifact is written to a temporary
// file, fsynced, fully verified, and renamed to its content-addressed name
// (by fsutil.MoveFile: a symbolic link at that name stays, and the file it
// names is replaced); the manifest is renamed into place last, and only
// when every table succeeded: a failed or interrupted build leaves the
// previous manifest, which names complete artifacts only. The returned
// error lists every failed table; the Result is returned in every case
// but a setup failure.
//
// Only one Build may run on an output directory at a time; Build takes
// an advisory lock on outDir/.lutbuild.lock to enforce it.
func Build(ctx context.Context, cfg *Config, outDir string, opts Options) (*Result, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	lock := filepath.Join(outDir, ".lutbuild.lock")
	unlock, err := fsutil.Lock(lock)
	if errors.Is(err, fsutil.ErrLocked) {
		return nil, fmt.Errorf("another build is running in %s (it holds %s)", outDir, lock)
	} else if err != nil {
		return nil, err
	}
	defer unlock()
	removeStaleTemps(outDir)

	var prev *tables.Manifest
	if m, err := tables.ReadManifest(filepath.Join(outDir, tables.ManifestName)); err == nil {
		prev = m
	} else if !errors.Is(err, os.ErrNotExist) {
		// A damaged previous manifest only costs a full rebuild.
		prev = nil
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	res := &Result{Tables: make([]TableResult, len(cfg.Tables))}
	var (
		wg       sync.WaitGroup
		reportMu sync.Mutex
		sem      = make(chan struct{}, jobs)
	)
	for i := range cfg.Tables {
		t := &cfg.Tables[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res.Tables[i] = TableResult{Name: t.Name, Kind: t.Kind, Status: StatusFailed,
					Err: fmt.Errorf("table %s: %w", t.Name, ctx.Err())}
				return
			}
			defer func() { <-sem }()
			start := time.Now()
			var old, base *tables.ManifestTable
			if prev != nil {
				base = prev.Table(t.Name)
				if !opts.Force {
					old = base
				}
			}
			r := buildTable(ctx, t, outDir, old, base, opts)
			r.Elapsed = time.Since(start)
			res.Tables[i] = r
			if opts.Report != nil {
				reportMu.Lock()
				opts.Report(r)
				reportMu.Unlock()
			}
		}()
	}
	wg.Wait()

	var errs []error
	for _, r := range res.Tables {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	// Every artifact's rename must be durable before the manifest names it.
	if err := fsutil.SyncDir(outDir); err != nil {
		return res, err
	}
	m := &tables.Manifest{Version: tables.ManifestVersion, Writer: compile.Version, Generated: time.Now().UTC()}
	if !opts.BuildTime.IsZero() {
		m.Generated = opts.BuildTime.UTC()
	}
	for _, r := range res.Tables {
		m.Tables = append(m.Tables, *r.Entry)
	}
	if err := writeManifest(outDir, m); err != nil {
		return res, fmt.Errorf("writing %s: %w", filepath.Join(outDir, tables.ManifestName), err)
	}
	res.Manifest = m
	if opts.Prune {
		res.Pruned = prune(outDir, m, prev)
	}
	return res, nil
}

// buildTable builds (or reuses, when old, its previous entry, is
// unchanged) one table; base is its previous entry for a delta.
func buildTable(ctx context.Context, t *TableConfig, outDir string, old, base *tables.ManifestTable, opts Options) TableResult {
	r := TableResult{Name: t.Name, Kind: t.Kind}
	fail := func(err error) TableResult {
		r.Status, r.Err = StatusFailed, fmt.Errorf("table %s: %w", t.Name, err)
		return r
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	optDigest, err := optionsDigest(t)
	if err != nil {
		return fail(err)
	}
	stamps, err := stampSources(t)
	if err != nil {
		return fail(err)
	}
	defer closeStamps(stamps)
	srcs := make([]tables.SourceDigest, 0, len(t.Sources))
	for _, s := range t.Sources {
		d, err := sourceDigest(&s)
		if err != nil {
			return fail(fmt.Errorf("source %s: %w", s.Resolved, fsutil.UnwrapPath(err)))
		}
		srcs = append(srcs, d)
	}
	if old != nil && old.Kind == t.Kind && old.OptionsDigest == optDigest && slices.Equal(old.Sources, srcs) && !t.ReadsDatabase() {
		if fi, err := os.Stat(filepath.Join(outDir, old.File)); err == nil && fi.Mode().IsRegular() && fi.Size() == old.Size {
			e := *old
			e.Delta = keptDelta(outDir, old.Delta)
			r.Status, r.Entry = StatusUnchanged, &e
			return r
		}
	}
	tmp, err := os.CreateTemp(outDir, "."+t.Name+".build-*"+t.Kind.Ext())
	if err != nil {
		return fail(err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	os.Remove(tmpPath) // the compilers create it atomically
	defer os.Remove(tmpPath)
	defer fsutil.TrackTemp(tmpPath)()

	e := &tables.ManifestTable{Name: t.Name, Kind: t.Kind, OptionsDigest: optDigest, Sources: srcs}
	switch t.Kind {
	case tables.KindLUT:
		err = buildLUT(t, tmpPath, opts.BuildTime)
	case tables.KindMMDB:
		err = buildMMDB(t, tmpPath, opts.BuildTime)
	default:
		err = fmt.Errorf("unknown kind %q", t.Kind)
	}
	// A source written meanwhile makes what the compile read, and any
	// error it met, meaningless.
	if cerr := checkSources(t, stamps); cerr != nil {
		return fail(cerr)
	}
	if err != nil {
		return fail(outputError(err, outDir))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// Verify what was written, as a node would, before naming it.
	sum, size, err := fsutil.FileSHA256(tmpPath)
	if err != nil {
		return fail(err)
	}
	e.SHA256, e.Size = sum, size
	info, err := tables.InspectArtifact(tmpPath, t.Kind)
	if err != nil {
		return fail(fmt.Errorf("verifying the new artifact: %w", err))
	}
	e.Rows, e.FormatVersion, e.BuildTime = info.Rows, info.FormatVersion, info.BuildTime
	if e.BuildTime.IsZero() {
		e.BuildTime = time.Now().UTC().Truncate(time.Second)
	}
	e.File = tables.ArtifactName(t.Name, t.Kind, sum)
	if sameVersion(base, t.Kind, sum, size) {
		// The bytes of the previous version (a forced build, or options
		// that changed nothing in the table): that version stays, with
		// its build time and delta, so that nodes fetch nothing again.
		e.BuildTime = base.BuildTime
		e.Delta = keptDelta(outDir, base.Delta)
	} else if (opts.Delta || t.Delta) && t.Kind == tables.KindLUT {
		chain := opts.deltaChain()
		if t.DeltaChain > 0 {
			chain = t.DeltaChain
		}
		if e.Delta, err = writeDelta(outDir, t.Name, base, tmpPath, sum, chain); err != nil {
			return fail(fmt.Errorf("writing the delta: %w", outputError(err, outDir)))
		}
	}
	final := filepath.Join(outDir, e.File)
	if fi, err := os.Stat(final); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		if s, _, err := fsutil.FileSHA256(final); err == nil && s == sum {
			r.Status, r.Entry = StatusBuilt, e
			return r
		}
	}
	if err := fsutil.MoveFile(tmpPath, final); err != nil {
		return fail(err)
	}
	r.Status, r.Entry = StatusBuilt, e
	return r
}

// buildLUT compiles a .lut table with its specs as declared.
func buildLUT(t *TableConfig, out string, buildTime time.Time) error {
	s := t.Sources[0]
	src, err := source.Open(s.Resolved, *s.LUT)
	if err != nil {
		return fmt.Errorf("source %s: %w", sourceName(&s), fsutil.UnwrapPath(err))
	}
	defer src.Close()
	o := *t.LUT
	o.BuildTime, o.SourceName = buildTime, sourceName(&s)
	_, err = compile.File(src, out, o)
	var se *compile.SourceError
	if err != nil && !errors.As(err, &se) {
		return fmt.Errorf("source %s: %w", sourceName(&s), err)
	}
	return err
}

// buildMMDB builds an .mmdb table with its specs as declared, its sources
// read from their resolved paths.
func buildMMDB(t *TableConfig, out string, buildTime time.Time) error {
	srcs := make([]iptable.Source, len(t.Sources))
	for i, s := range t.Sources {
		srcs[i] = *s.MMDB
		srcs[i].Path = s.Resolved
	}
	o := *t.MMDB
	if !buildTime.IsZero() {
		o.BuildEpoch = buildTime.Unix()
	}
	_, err := iptable.Compile(out, o, srcs)
	return err
}

// outputError names an error writing a file of outDir (the compile's
// temporary files, hidden: a full disk) by the directory, not by the source read
// or the temporary file's name.
func outputError(err error, outDir string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && filepath.Dir(pe.Path) == filepath.Clean(outDir) && strings.HasPrefix(filepath.Base(pe.Path), ".") {
		return fmt.Errorf("writing into %s: %w", outDir, pe.Err)
	}
	return err
}

// optionsDigest hashes what, besides the sources' content, determines a
// table's artifact.
func optionsDigest(t *TableConfig) (string, error) {
	c := *t
	c.Sources = slices.Clone(t.Sources)
	c.Delta, c.DeltaChain = false, 0 // how a version is published, not what it holds
	b, err := json.Marshal(struct {
		Writer string       `json:"writer"`
		Table  *TableConfig `json:"table"`
	}{compile.Version, &c})
	if err != nil {
		return "", err
	}
	return fsutil.BytesSHA256(b), nil
}

// removeStaleTemps removes the temporary files an interrupted build left,
// and the directories of partitions (.lut-spill-*, 24 bytes a row) a
// compile of a large table makes beside its output.
func removeStaleTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, ".lut-spill-") && e.IsDir():
			os.RemoveAll(filepath.Join(dir, n))
		case strings.HasPrefix(n, ".") && (strings.Contains(n, ".build-") || strings.Contains(n, ".tmp-")):
			os.Remove(filepath.Join(dir, n))
		}
	}
}

// artifactRE matches the names tables.ArtifactName and tables.DeltaName
// give.
var artifactRE = regexp.MustCompile(`^(.+)-([0-9a-f]{16})\.(lut|mmdb|lutdelta)$`)

// prune removes artifacts named by neither m nor prev.
func prune(dir string, m, prev *tables.Manifest) []string {
	keep := map[string]bool{}
	for _, mm := range []*tables.Manifest{m, prev} {
		if mm == nil {
			continue
		}
		for _, t := range mm.Tables {
			keep[t.File] = true
			if t.Delta != nil {
				keep[t.Delta.File] = true
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if keep[n] || !e.Type().IsRegular() || !artifactRE.MatchString(n) {
			continue
		}
		if os.Remove(filepath.Join(dir, n)) == nil {
			out = append(out, n)
		}
	}
	return out
}
