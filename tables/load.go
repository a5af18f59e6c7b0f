package tables

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// fileID identifies one version of a file: a file renamed into place has a
// new inode; a file rewritten in place a new size or modification time.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    int64
	mode     fs.FileMode
}

func (id fileID) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%o", id.dev, id.ino, id.size, id.mtime, id.mode)
}

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode().Type()}
	id.dev, id.ino, _ = sysIDs(fi)
	return id, nil
}

// inManifestMode reports whether the next load reads a manifest.
func (s *Set) inManifestMode() bool {
	if s.manifestPath != "" {
		return true
	}
	_, err := os.Stat(filepath.Join(s.dir, ManifestName))
	return err == nil
}

// RejectError is the reason a manifest or a file was rejected.
type RejectError struct {
	Table string // "" for a whole-manifest problem
	File  string
	Err   error
}

func (e *RejectError) Error() string {
	if e.Table == "" {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("table %s: %s: %v", e.Table, e.File, e.Err)
}

func (e *RejectError) Unwrap() error { return e.Err }

// load checks the directory and publishes a new snapshot if anything
// changed. With force, a state already rejected is tried again.
func (s *Set) load(force bool) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.checks.Add(1)
	if s.recheck.Swap(false) {
		s.lastPrint = "" // a version was damaged: look at its file again
	}
	start := time.Now()
	if s.manifestPath != "" {
		return s.loadManifest(s.manifestPath, start, force)
	}
	mp := filepath.Join(s.dir, ManifestName)
	// A set loaded from a manifest whose manifest is gone (the directory
	// removed) stays a manifest set: the read error is a rejection.
	if _, err := os.Lstat(mp); err == nil || s.cur.Load().source == mp {
		return s.loadManifest(mp, start, force)
	}
	return s.loadDir(start, force)
}

// reject logs and counts a rejection.
func (s *Set) reject(err *RejectError) {
	s.rejections.Add(1)
	now := time.Now()
	s.statsMu.Lock()
	s.lastReject, s.lastRejAt = err.Error(), now
	if err.Table != "" {
		r := s.tableRej[err.Table]
		if r == nil {
			r = &tableRejection{}
			s.tableRej[err.Table] = r
		}
		r.count++
		r.reason, r.at = err.Err.Error(), now
	}
	s.statsMu.Unlock()
	s.log.Warn("tables: rejected", "table", err.Table, "file", err.File, "reason", err.Err.Error(),
		"generation", s.cur.Load().gen)
}

// loadManifest loads a manifest as one unit: every table opens and
// verifies, or the manifest is rejected and the current snapshot stays.
func (s *Set) loadManifest(mp string, start time.Time, force bool) error {
	b, err := fsutil.ReadRegular(mp) // a named pipe must not block the load
	if err != nil {
		rerr := &RejectError{File: mp, Err: fmt.Errorf("reading the manifest: %w", fsutil.UnwrapPath(err))}
		if errors.Is(err, fs.ErrNotExist) {
			s.markMissing(s.cur.Load().list...)
		}
		if s.lastPrint != "read-error:"+err.Error() || force {
			s.lastPrint = "read-error:" + err.Error()
			s.reject(rerr)
		}
		return rerr
	}
	// The fingerprint covers the manifest's bytes and the identity of
	// every file it names, so a missing file that appears later is
	// retried.
	mdigest := fsutil.BytesSHA256(b)
	print := "manifest:" + mdigest
	m, perr := ParseManifest(mp, b)
	if s.remote != nil {
		// A remote set's manifest is the cache's: one damaged on disk
		// could still parse and name other tables or files.
		if err := s.remote.vouch(mdigest); err != nil {
			perr = err
		}
	}
	if perr == nil {
		var sb strings.Builder
		sb.WriteString(print)
		for _, t := range m.Tables {
			id, err := statID(filepath.Join(filepath.Dir(mp), t.File))
			if err != nil {
				fmt.Fprintf(&sb, "|%s:err", t.File)
			} else {
				fmt.Fprintf(&sb, "|%s:%s", t.File, id)
			}
		}
		print = sb.String()
	}
	if print == s.lastPrint && !force {
		return nil
	}
	s.lastPrint = print
	if perr != nil {
		rerr := &RejectError{File: mp, Err: &trimmed{msg: strings.TrimPrefix(perr.Error(), "manifest "+mp+": "), err: perr}}
		s.reject(rerr)
		return rerr
	}
	cur := s.cur.Load()
	dir := filepath.Dir(mp)
	var opened, entries []*entry
	fail := func(rerr *RejectError) error {
		for _, e := range opened {
			e.release()
		}
		s.reject(rerr)
		return rerr
	}
	gen := cur.gen + 1
	changed := len(m.Tables) != len(cur.list)
	for _, t := range m.Tables {
		path := filepath.Join(dir, t.File)
		id, err := statID(path)
		if err != nil {
			if old := cur.byName[t.Name]; old != nil && old.path == path && errors.Is(err, fs.ErrNotExist) {
				s.markMissing(old)
			}
			return fail(&RejectError{Table: t.Name, File: path, Err: fsutil.UnwrapPath(err)})
		}
		s.clearMissing(t.Name)
		old := cur.byName[t.Name]
		s.checkInPlace(old, path, id)
		if old != nil && old.path == path && old.id == id && old.kind == t.Kind && old.digest == t.SHA256 && !old.damaged.Load() {
			entries = append(entries, old)
			continue
		}
		changed = true
		e, err := s.openEntry(t.Name, t.Kind, path, id, t.SHA256, gen)
		if err != nil {
			return fail(&RejectError{Table: t.Name, File: path, Err: err})
		}
		if e.rows != t.Rows {
			opened = append(opened, e)
			return fail(&RejectError{Table: t.Name, File: path, Err: fmt.Errorf("the file has %d rows, the manifest says %d", e.rows, t.Rows)})
		}
		opened = append(opened, e)
		entries = append(entries, e)
	}
	if !changed && cur.source == mp && cur.manifestDigest == mdigest {
		return nil
	}
	s.publishEntries(entries, opened, mp, mdigest, gen, start)
	return nil
}

// loadDir loads a directory without a manifest: every NAME.lut and
// NAME.mmdb is a table. Tables are independent: a bad file is rejected and
// the table's previous version (if any) stays.
func (s *Set) loadDir(start time.Time, force bool) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		rerr := &RejectError{File: s.dir, Err: fmt.Errorf("reading the directory: %w (the tables mapped stay live)", fsutil.UnwrapPath(err))}
		s.markMissing(s.cur.Load().list...)
		if s.lastPrint != "dir-error" || force {
			s.lastPrint = "dir-error"
			s.reject(rerr)
		}
		return rerr
	}
	type cand struct {
		name string
		kind Kind
		path string
		id   fileID
		err  error
	}
	var cands []cand
	count := map[string]int{}
	for _, de := range ents {
		n := de.Name()
		if strings.HasPrefix(n, ".") {
			continue
		}
		var kind Kind
		switch filepath.Ext(n) {
		case ".lut":
			kind = KindLUT
		case ".mmdb":
			kind = KindMMDB
		default:
			continue
		}
		name := strings.TrimSuffix(n, filepath.Ext(n))
		if !nameRE.MatchString(name) {
			continue
		}
		path := filepath.Join(s.dir, n)
		c := cand{name: name, kind: kind, path: path}
		c.id, c.err = statID(path)
		if c.err == nil && !c.id.mode.IsRegular() {
			c.err = fmt.Errorf("not a regular file (%s)", fsutil.DescribeMode(c.id.mode))
		}
		count[name]++
		cands = append(cands, c)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].path < cands[j].path })
	var sb strings.Builder
	sb.WriteString("dir")
	for _, c := range cands {
		fmt.Fprintf(&sb, "|%s:%s", filepath.Base(c.path), c.id)
	}
	print := sb.String()
	if print == s.lastPrint && !force {
		return nil
	}
	s.lastPrint = print

	cur := s.cur.Load()
	gen := cur.gen + 1
	var (
		entries, opened []*entry
		firstErr        error
		changed         bool
		seen            = map[string]bool{}
	)
	keepOld := func(name string) {
		if old := cur.byName[name]; old != nil && !seen[name] {
			entries = append(entries, old)
			seen[name] = true
		}
	}
	for _, c := range cands {
		s.clearMissing(c.name)
		if c.err == nil {
			s.checkInPlace(cur.byName[c.name], c.path, c.id)
		}
		if count[c.name] > 1 {
			if s.rejectedFile[c.path] != c.id || force {
				s.rejectedFile[c.path] = c.id
				rerr := &RejectError{Table: c.name, File: c.path, Err: fmt.Errorf("both %s.lut and %s.mmdb exist; remove one", c.name, c.name)}
				s.reject(rerr)
				firstErr = cmpErr(firstErr, rerr)
			}
			keepOld(c.name)
			continue
		}
		if old := cur.byName[c.name]; old != nil && old.path == c.path && old.id == c.id && c.err == nil && !old.damaged.Load() {
			entries = append(entries, old)
			seen[c.name] = true
			continue
		}
		if c.err == nil && s.rejectedFile[c.path] == c.id && !force {
			keepOld(c.name)
			continue
		}
		err := c.err
		var e *entry
		if err == nil {
			e, err = s.openEntry(c.name, c.kind, c.path, c.id, "", gen)
		}
		if err != nil {
			s.rejectedFile[c.path] = c.id
			rerr := &RejectError{Table: c.name, File: c.path, Err: err}
			s.reject(rerr)
			firstErr = cmpErr(firstErr, rerr)
			keepOld(c.name)
			continue
		}
		delete(s.rejectedFile, c.path)
		changed = true
		opened = append(opened, e)
		entries = append(entries, e)
		seen[c.name] = true
	}
	// A table whose file is gone keeps its version (the mapping of an
	// unlinked file stays valid): a removed file or directory never
	// publishes an emptier set.
	for _, old := range cur.list {
		if seen[old.name] {
			continue
		}
		keepOld(old.name)
		if s.markMissing(old) || force {
			rerr := &RejectError{Table: old.name, File: old.path, Err: errors.New("the file is gone: the version mapped stays live until a new file is published")}
			s.reject(rerr)
			firstErr = cmpErr(firstErr, rerr)
		}
	}
	if !changed && cur.source == s.dir {
		return firstErr
	}
	s.publishEntries(entries, opened, s.dir, "", gen, start)
	return firstErr
}

// markMissing records that the files of entries are gone; it reports
// whether one of them was not known to be missing.
func (s *Set) markMissing(entries ...*entry) bool {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	added := false
	for _, e := range entries {
		if _, ok := s.missing[e.name]; !ok {
			s.missing[e.name] = struct{}{}
			added = true
		}
	}
	return added
}

// clearMissing records that the file of table name is there.
func (s *Set) clearMissing(name string) {
	s.statsMu.Lock()
	delete(s.missing, name)
	s.statsMu.Unlock()
}

func cmpErr(first error, err error) error {
	if first != nil {
		return first
	}
	return err
}

// publishEntries builds a snapshot of entries and publishes it. Entries
// reused from the current snapshot get a reference; opened ones already
// hold theirs.
func (s *Set) publishEntries(entries, opened []*entry, source, manifestDigest string, gen uint64, start time.Time) {
	for _, e := range entries {
		if !slices.Contains(opened, e) {
			e.acquire()
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	sn := &Snapshot{gen: gen, loadedAt: time.Now(), source: source, manifestDigest: manifestDigest, list: entries,
		byName: make(map[string]*entry, len(entries))}
	for _, e := range entries {
		sn.byName[e.name] = e
		s.nameID(e.name)
	}
	names := *s.names.Load()
	sn.byID = make([]*entry, len(names))
	for name, id := range names {
		sn.byID[id] = sn.byName[name]
	}
	s.publish(sn)
	s.gen.Store(gen)
	load := time.Since(start)
	s.statsMu.Lock()
	s.lastLoad = load
	s.statsMu.Unlock()
	var changed []string
	for _, e := range opened {
		changed = append(changed, e.name)
	}
	s.log.Info("tables: published", "generation", gen, "source", source, "tables", len(entries),
		"changed", strings.Join(changed, ","), "took", load)
	if fn := s.onPublish.Load(); fn != nil {
		(*fn)()
	}
}

// openEntry opens and checks one table file. digest is the manifest's
// SHA256 ("" in a directory without a manifest).
func (s *Set) openEntry(name string, kind Kind, path string, id fileID, digest string, gen uint64) (*entry, error) {
	if !id.mode.IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fsutil.DescribeMode(id.mode))
	}
	e := &entry{name: name, kind: kind, path: path, id: id, size: id.size, gen: gen, verify: s.opts.DataVerify}
	t0 := time.Now()
	switch kind {
	case KindLUT:
		t, err := reader.OpenWith(path, reader.Options{Prefetch: s.opts.Prefetch})
		if err != nil {
			return nil, trimPath(err, path)
		}
		e.lut = t
		h := t.Header()
		e.rows, e.formatVersion, e.buildTime = int64(t.Rows()), fmt.Sprintf("%d.%d", h.Major, h.Minor), t.BuildTime()
	case KindMMDB:
		m, err := mmdb.Open(path)
		if err != nil {
			return nil, trimPath(err, path)
		}
		e.mm = m
		md := m.Metadata()
		e.rows = int64(md.NodeCount)
		e.formatVersion = fmt.Sprintf("%d.%d", md.BinaryFormatMajorVersion, md.BinaryFormatMinorVersion)
		e.buildTime = time.Unix(int64(md.BuildEpoch), 0).UTC()
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	e.refs.Store(1)
	s.register(e)
	e.openDur = time.Since(t0)
	if err := s.verifyEntry(e, digest); err != nil {
		e.release()
		return nil, err
	}
	e.loadedAt = time.Now()
	return e, nil
}

// verifyEntry runs the configured full-data check.
func (s *Set) verifyEntry(e *entry, digest string) error {
	e.digest = digest
	if s.opts.DataVerify == DataVerifyNone {
		return nil
	}
	t0 := time.Now()
	defer func() { e.verifyDur = time.Since(t0) }()
	var (
		sum string
		err error
	)
	if e.mm != nil {
		sum = fsutil.BytesSHA256(e.mm.Bytes())
	} else {
		sum, err = hashSameFile(e.path, e.id)
	}
	if err != nil {
		return err
	}
	if digest != "" && sum != digest {
		return fmt.Errorf("digest mismatch: the file's sha256 is %s, the manifest says %s", sum, digest)
	}
	e.digest = sum
	if s.opts.DataVerify == DataVerifyDigest {
		return nil
	}
	if e.lut != nil {
		if err := e.lut.Verify(); err != nil {
			return err
		}
	}
	if e.mm != nil {
		if err := e.mm.Verify(); err != nil {
			return err
		}
	}
	return nil
}

// trimPath removes a leading "path: " from err's text: RejectError names
// the file already.
func trimPath(err error, path string) error {
	msg := err.Error()
	if strings.HasPrefix(msg, path+": ") {
		return &trimmed{msg: strings.TrimPrefix(msg, path+": "), err: err}
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &trimmed{msg: pe.Op + ": " + pe.Err.Error(), err: err}
	}
	return err
}

type trimmed struct {
	msg string
	err error
}

func (t *trimmed) Error() string { return t.msg }
func (t *trimmed) Unwrap() error { return t.err }

// hashSameFile hashes the file at path if it still is the file identified
// by id (the one that was opened).
func hashSameFile(path string, id fileID) (string, error) {
	f, fi, err := fsutil.OpenRegular(path)
	if err != nil {
		return "", fmt.Errorf("computing the digest: %w", fsutil.UnwrapPath(err))
	}
	defer f.Close()
	if dev, ino, _ := sysIDs(fi); dev != id.dev || ino != id.ino || fi.Size() != id.size {
		return "", errors.New("the file was replaced while it was being loaded")
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("computing the digest: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
