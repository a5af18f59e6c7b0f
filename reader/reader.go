// Package reader looks keys up in .lut tables in place: Open maps the file
// read-only, checks its header, section table and schema (a few
// microseconds, independent of the table's size), and lookups then read
// the mapping directly, with no heap allocation and no lock.
//
// # Basic use
//
//	t, err := reader.Open("customers.lut")
//	...
//	defer t.Close()
//	var row reader.Row
//	if t.Get([]byte("42"), &row) {
//		fmt.Printf("%s\n", row.Col(t.ColumnIndex("Email")))
//	}
//
// # Three ways to look up
//
//   - Get copies the row into a caller-supplied Row. With a reused Row it
//     allocates nothing, and the copy stays valid whatever happens to the
//     table afterwards.
//   - Lookup returns a View that aliases the mapped file: no copy at all.
//     A View is valid only while the table is mapped: take it between
//     Acquire and Release (the table is unmapped only after the last
//     Release following Close; see ExampleTable_Lookup).
//   - LookupBatch looks many keys up at once, stage by stage (hash all,
//     read all slots, read all records), so that the memory accesses of
//     different keys overlap. It is the fast path for a batch of events.
//
// # Range and time-bounded tables
//
// A range table (lut compile --match range) answers an integer:
// GetRange, LookupRange, and MatchRange for every range that holds it. A
// time-bounded table (--valid-from/--valid-to: DHCP or VPN leases, rotas,
// ownership history) answers a key at a time in Unix seconds, valid_to
// exclusive: GetAt, LookupAt, and MatchAt for several rows. A caller with
// an event's time (enrichd's rules) calls GetAt or MatchAt on any table:
// an exact table ignores the time, a range table reads the key as a
// decimal integer. Get and Lookup answer a time-bounded table at the
// current time. The Match methods fill a caller's []View (its length is
// max_matches) in the table's order (Overlap: narrowest first, or source
// order) and allocate nothing. See ExampleTable_GetAt.
//
// # Thread safety
//
// Lookups, Acquire and Release are safe for concurrent use. Close may be
// called while other goroutines hold acquired references: the mapping is
// released when the last of them calls Release. Calling a lookup method on
// a table without holding a reference, concurrently with or after Close, is
// a use-after-free of the mapping and may crash the process.
//
// # Damaged files
//
// Every offset read from the file is bounds-checked, so a damaged table
// gives wrong answers or errors but never a panic or an access out of the
// mapping. Open checks the structure; Verify checks every checksum and
// every record, and OpenOptions.Verify runs it at open.
package reader

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// Table is an open .lut table.
type Table struct {
	file     []byte // the whole file
	mapped   bool
	header   format.Header
	sections [format.HighestSection + 1]format.Section
	schema   *format.Schema
	meta     Meta
	mphf     *format.MPHF    // the perfect hash, or nil in a bucketed index
	buckets  *format.Buckets // the bucket table of a bucketed index, or nil
	finder   format.Finder
	slots    []byte
	data     []byte
	ncols    int
	touch    uint64 // offset past a narrow record's header, for prefetching
	fold     bool
	match    format.MatchKind
	labels   uint64 // suffix tables: the label mask of the SUFFIX section
	colIndex map[string]int
	// slow sends Lookup and Get off their exact path: a case-folded, a
	// range or a time-bounded table.
	slow   bool
	iv     *format.Intervals // RANGE or TIMEBOUND section, or nil
	ivKind uint32            // its kind, or 0
	tiv    *format.Intervals // a range table bounded in time: its TIMEBOUND section
	extra  []format.Section  // the sections above HighestSection it uses
	lit    *literalTable     // wildcard and pattern tables, or nil
	path   string

	// refs counts the owner's reference (dropped by Close) and every
	// Acquire. The mapping is released when it reaches zero.
	refs   atomic.Int64
	closed atomic.Bool
}

// Meta is the META section: how the table was built.
type Meta = format.Meta

// Options configure Open.
type Options struct {
	// Verify runs the full Verify at open (reads every byte).
	Verify bool
	// Prefetch asks the kernel to read the hash and slot sections in
	// ahead of the first lookups.
	Prefetch bool
}

// Open maps the table at path and checks its structure.
func Open(path string) (*Table, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, opts Options) (*Table, error) {
	// A named pipe, a directory or a device is refused before a read (a
	// pipe with no writer would block the open).
	f, fi, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fi.Size()
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: file too large", path)
	}
	if size < format.HeaderSize+format.FooterSize {
		// Too small to map usefully; let the decoder explain.
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		_, err := openBytes(b, false)
		if err == nil {
			err = format.Corruptf(size, "file truncated")
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := mmapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: mapping: %w", path, err)
	}
	t, err := openBytes(b, true)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", path, err), munmap(b))
	}
	t.path = path
	if opts.Verify {
		if err := t.Verify(); err != nil {
			t.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if opts.Prefetch {
		t.Prefetch()
	}
	return t, nil
}

// OpenBytes opens a table held in memory. The table aliases b.
func OpenBytes(b []byte) (*Table, error) { return openBytes(b, false) }

func openBytes(b []byte, mapped bool) (*Table, error) {
	h, err := format.DecodeHeader(b, int64(len(b)))
	if err != nil {
		return nil, err
	}
	t := &Table{file: b, mapped: mapped, header: h, ncols: int(h.Columns), fold: h.Incompat&format.FeatureFoldCase != 0}
	t.slow = t.fold
	t.touch = uint64(format.RecordHeaderSize(t.ncols, false)) + 8
	t.sections, err = format.DecodeSections(b, &h)
	if err != nil {
		return nil, err
	}
	sec := func(kind int) []byte { s := t.sections[kind]; return b[s.Off : s.Off+s.Len] }
	t.schema, err = format.DecodeSchema(sec(format.SectionSchema), int64(t.sections[format.SectionSchema].Off), h.Columns)
	if err != nil {
		return nil, err
	}
	if (h.Incompat&format.FeatureColumnTypes != 0) != (t.schema.Types != nil) {
		return nil, format.Corruptf(int64(t.sections[format.SectionSchema].Off), "the schema's column types do not agree with the header's feature bits")
	}
	t.slots = sec(format.SectionSlots)
	t.data = sec(format.SectionData)
	if err := t.openIndex(sec(format.SectionMPHF)); err != nil {
		return nil, err
	}
	if err := t.openMatch(); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(sec(format.SectionMeta), &t.meta); err != nil {
		return nil, format.Corruptf(int64(t.sections[format.SectionMeta].Off), "META section: %v", err)
	}
	if err := t.openIntervals(); err != nil {
		return nil, err
	}
	t.colIndex = make(map[string]int, len(t.schema.Columns))
	for i, c := range t.schema.Columns {
		if _, dup := t.colIndex[c]; dup {
			return nil, format.Corruptf(int64(t.sections[format.SectionSchema].Off), "column %q appears twice", c)
		}
		t.colIndex[c] = i
	}
	t.refs.Store(1)
	return t, nil
}

// Close drops the owner's reference. The mapping is released now, or when
// the last acquired reference is released. Close is idempotent.
func (t *Table) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	return t.Release()
}

// Acquire takes a reference that keeps the mapping valid until Release.
// It reports false if the table was already released.
func (t *Table) Acquire() bool {
	for {
		n := t.refs.Load()
		if n <= 0 {
			return false
		}
		if t.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference taken by Acquire.
func (t *Table) Release() error {
	n := t.refs.Add(-1)
	if n > 0 {
		return nil
	}
	if n < 0 {
		panic("reader: Table released more often than acquired")
	}
	if t.mapped {
		b := t.file
		t.file, t.data, t.slots = nil, nil, nil
		return munmap(b)
	}
	return nil
}

// Bytes returns the whole file, as mapped (or as given to OpenBytes). It
// aliases the mapping: a fault at an address inside it is a fault in this
// table's file (see tables.Set.Fault).
func (t *Table) Bytes() []byte { return t.file }

// Path returns the file the table was opened from ("" for OpenBytes).
func (t *Table) Path() string { return t.path }

// Rows returns the number of rows.
func (t *Table) Rows() int {
	if t.iv != nil {
		return int(t.iv.R)
	}
	return int(t.header.Rows)
}

// Columns returns the column names, in order. The slice must not be
// modified.
func (t *Table) Columns() []string { return t.schema.Columns }

// ColumnTypes returns the type of each column, or nil when every column
// is text (a table compiled without column types). The slice is shared:
// do not modify it.
func (t *Table) ColumnTypes() []format.ColumnType { return t.schema.Types }

// KeyColumns returns the indexes of the key columns.
func (t *Table) KeyColumns() []int { return t.schema.Key }

// ColumnIndex returns the index of the named column, or -1.
func (t *Table) ColumnIndex(name string) int {
	if i, ok := t.colIndex[name]; ok {
		return i
	}
	return -1
}

// FoldCase reports whether keys are case-folded.
func (t *Table) FoldCase() bool { return t.fold }

// Header returns the decoded file header.
func (t *Table) Header() format.Header { return t.header }

// Sections returns the file's sections: the required ones and those of
// its match kind, in the order of their kinds.
func (t *Table) Sections() []format.Section {
	var out []format.Section
	for _, s := range t.sections[1:] {
		if s.Kind != 0 {
			out = append(out, s)
		}
	}
	return append(out, t.extra...)
}

// Meta returns how the table was built.
func (t *Table) Meta() Meta { return t.meta }

// BuildTime returns the recorded build time, or the zero time.
func (t *Table) BuildTime() time.Time {
	if t.header.BuildTime == 0 {
		return time.Time{}
	}
	return time.Unix(t.header.BuildTime, 0).UTC()
}

// Size returns the file size in bytes.
func (t *Table) Size() int64 { return int64(t.header.FileSize) }

// Prefetch reads the hash and slot sections in ahead of use, so that the
// first lookups do not wait on disk. It returns when they are in memory
// (on kernels before Linux 5.14, when the kernel has been asked to read
// them).
func (t *Table) Prefetch() {
	if !t.mapped {
		return
	}
	s := t.sections[format.SectionMPHF]
	willNeed(alignPage(t.file, s.Off, s.Len))
	s = t.sections[format.SectionSlots]
	willNeed(alignPage(t.file, s.Off, s.Len))
}

func alignPage(b []byte, off, n uint64) []byte {
	const page = 4096
	start := off &^ (page - 1)
	return b[start : off+n]
}

// find returns the record for a normalised key.
func (t *Table) find(key []byte) (format.Record, bool) { return t.finder.Find(key) }

// foldedKey returns key case-folded, in buf if it fits, for a table
// compiled with FeatureFoldCase.
func foldedKey(key []byte, buf *[128]byte) []byte {
	return format.FoldKey(buf[:0], key)
}

// Lookup returns a View of the row for key, aliasing the mapping. The
// caller must hold a reference (see Acquire) for as long as it uses the
// View.
func (t *Table) Lookup(key []byte) (View, bool) {
	if t.slow {
		return t.lookupSlow(key)
	}
	r, ok := t.find(key)
	return View{r}, ok
}

// lookupSlow is Lookup in a case-folded, suffix, range or time-bounded
// table.
func (t *Table) lookupSlow(key []byte) (View, bool) {
	if t.iv != nil {
		return t.lookupMatch(key)
	}
	if t.match != format.MatchExact {
		r, ok := t.findMatch(key)
		return View{r}, ok
	}
	var buf [128]byte
	k := foldedKey(key, &buf)
	r, ok := t.find(k)
	return View{r}, ok
}

// Get copies the row for key into row and reports whether it was found.
// With a reused row it does not allocate.
func (t *Table) Get(key []byte, row *Row) bool {
	if t.slow {
		return t.getSlow(key, row)
	}
	r, ok := t.find(key)
	if !ok {
		return false
	}
	row.set(r)
	return true
}

// getSlow is Get in a case-folded, suffix, range or time-bounded table.
func (t *Table) getSlow(key []byte, row *Row) bool {
	if t.iv != nil {
		v, ok := t.lookupMatch(key)
		if ok {
			row.set(v.rec)
		}
		return ok
	}
	var (
		r  format.Record
		ok bool
	)
	if t.match != format.MatchExact {
		r, ok = t.findMatch(key)
	} else {
		var buf [128]byte
		r, ok = t.find(foldedKey(key, &buf))
	}
	if !ok {
		return false
	}
	row.set(r)
	return true
}

// JoinKey appends a composite key (parts joined by format.KeySeparator) to
// dst, for tables compiled with several key columns.
func JoinKey(dst []byte, parts ...[]byte) []byte {
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, format.KeySeparator)
		}
		dst = append(dst, p...)
	}
	return dst
}

// View is a row aliasing the mapped table. The zero View is an absent row.
type View struct{ rec format.Record }

// Len returns the number of columns (0 for an absent row).
func (v View) Len() int { return v.rec.Columns() }

// Col returns column i's value (nil when out of range).
func (v View) Col(i int) []byte { return v.rec.Value(i) }

// Key returns the normalised key.
func (v View) Key() []byte { return v.rec.Key() }

// Values returns the values of every column, concatenated as stored:
// each value Col and Cols return is a part of it.
func (v View) Values() []byte { return v.rec.Values() }

// Cols appends the value of every column to dst, as Col returns them, and
// returns the extended slice. It is cheaper than calling Col for each.
func (v View) Cols(dst [][]byte) [][]byte { return v.rec.AppendValues(dst) }

// Ends appends the end offset of every column's value within Values to
// dst: column i is Values()[end(i-1):end(i)]. It reports false, with dst
// unchanged, for a damaged row, whose Cols are then partly nil.
func (v View) Ends(dst []int32) ([]int32, bool) { return v.rec.AppendEnds(dst) }

// Ends16 returns the end offsets of the row's values as stored, when they
// are 16-bit (see format.Record.Ends16): unchecked, for callers that check
// them as they go.
func (v View) Ends16() ([]byte, bool) { return v.rec.Ends16() }

// Row is a copied row; reuse one Row across Get calls to avoid allocation.
type Row struct {
	rec format.Record
	buf []byte
}

// set makes the row a copy of r.
func (row *Row) set(r format.Record) {
	n := r.Size()
	if cap(row.buf) < n {
		row.grow(n)
	}
	// The copy comes last, so that nothing is kept across its call.
	src := r.Bytes()
	row.rec = r.Rebased(row.buf)
	copy(row.buf[:n], src)
}

// grow gives the row a buffer of at least n bytes.
func (row *Row) grow(n int) { row.buf = make([]byte, n, max(2*n, 256)) }

// Len returns the number of columns.
func (r *Row) Len() int { return r.rec.Columns() }

// Col returns column i's value (nil when out of range). The slice aliases
// the Row and is valid until its next use.
func (r *Row) Col(i int) []byte { return r.rec.Value(i) }

// Key returns the normalised key.
func (r *Row) Key() []byte { return r.rec.Key() }

// View returns the row as a View (aliasing the Row).
func (r *Row) View() View { return View{r.rec} }

// ErrVerify wraps every Verify failure.
var ErrVerify = errors.New("verification failed")

// Verify checks every section checksum, that every slot points at a
// well-formed record whose key hashes to that slot, and that no two slots
// share a record.
func (t *Table) Verify() error { return t.VerifyProgress(nil) }

// VerifyProgress is Verify calling progress, when not nil, with the rows
// checked so far and the table's rows, about every 65,536 rows and once
// at the end (the checksums come first, and are quick beside the rows).
func (t *Table) VerifyProgress(progress func(done, total uint64)) error {
	if err := t.checkSums(); err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	all := t.Sections()
	// The gaps between sections (alignment padding) are covered by no
	// checksum: they must be zero.
	secs := all
	slices.SortFunc(secs, func(a, b format.Section) int { return cmp.Compare(a.Off, b.Off) })
	end := uint64(format.HeaderSize)
	for _, s := range append(secs, format.Section{Off: t.header.SectionsOff}) {
		for off := end; off < s.Off; off++ {
			if t.file[off] != 0 {
				return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(int64(off), "non-zero padding between sections"))
			}
		}
		end = s.Off + s.Len
	}
	mc := matchCheck{t: t}
	check := func(off uint64, r format.Record) error { return t.verifyRow(off, r, &mc) }
	var err error
	if t.buckets != nil {
		err = t.verifyBuckets(progress, check)
	} else {
		err = t.verifySlots(progress, check)
	}
	if err != nil {
		return err
	}
	if err := mc.done(); err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	if err := t.verifyMatch(); err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	if progress != nil {
		progress(t.header.Rows, t.header.Rows)
	}
	return nil
}

// verifySlots checks that every slot of a perfect hash points at a
// well-formed record whose key hashes back to that slot, and then the
// record (check). A slot whose key hashes back to it proves the slots are
// a permutation: two slots cannot share a record, since its key has one
// position.
func (t *Table) verifySlots(progress func(done, total uint64), check func(off uint64, r format.Record) error) error {
	dataOff := int64(t.sections[format.SectionData].Off)
	for pos := uint64(0); pos < t.header.Rows; pos++ {
		if progress != nil && pos&0xffff == 0 {
			progress(pos, t.header.Rows)
		}
		slot := binary.LittleEndian.Uint64(t.slots[8*pos:])
		off := format.SlotRecord(slot)
		r, ok := format.ParseRecord(t.data, off, t.ncols)
		if !ok || !r.Valid() {
			return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "slot %d points at a malformed record", pos))
		}
		h := format.HashKey(r.Key(), t.header.Seed)
		if got := t.mphf.Index(h); got != pos || format.Fingerprint(h) != format.SlotFingerprint(slot) {
			return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "key %q does not find its own row (slot %d, hash gives %d)", r.Key(), pos, got))
		}
		if err := check(off, r); err != nil {
			return err
		}
	}
	return nil
}

// verifyRow checks a live row's typed values and its key's match rules.
func (t *Table) verifyRow(off uint64, r format.Record, mc *matchCheck) error {
	dataOff := int64(t.sections[format.SectionData].Off)
	for c, ct := range t.schema.Types {
		if ct != format.TypeText && !format.ValidValue(ct, r.Value(c)) {
			return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "row of key %q: column %q holds %q, not a %s value", r.Key(), t.schema.Columns[c], r.Value(c), ct))
		}
	}
	if err := mc.key(r.Key()); err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "%v", err))
	}
	return nil
}

// checkSums checks every section's checksum: an error wrapping
// format.ErrCorrupt names the first section that does not match.
func (t *Table) checkSums() error {
	for _, s := range t.Sections() {
		if sum := xxh3.Hash(t.file[s.Off : s.Off+s.Len]); sum != s.Checksum {
			return format.Corruptf(int64(s.Off), "%s section checksum mismatch (stored %#x, computed %#x)", format.SectionName(s.Kind), s.Checksum, sum)
		}
	}
	return nil
}

// Records calls fn for every row in DATA order (the source order) whose
// record is the live one for its key (rows dropped as duplicates are
// skipped). The Views alias the mapping.
//
// Records first checks every section's checksum (it reads the whole DATA
// section anyway), and a record whose key finds no row is damage too: a
// damaged table gives an error wrapping format.ErrCorrupt, never rows
// dropped or changed.
func (t *Table) Records(fn func(View) bool) error {
	if err := t.checkSums(); err != nil {
		return err
	}
	for off := uint64(0); off < uint64(len(t.data)); {
		r, ok := format.ParseRecord(t.data, off, t.ncols)
		if !ok {
			return format.Corruptf(int64(t.sections[format.SectionData].Off+off), "malformed record")
		}
		// A range or time-bounded table keeps every row.
		live, found := t.find(r.Key())
		if t.iv == nil && !found {
			return format.Corruptf(int64(t.sections[format.SectionData].Off+off), "key %q does not find its own row", r.Key())
		}
		if t.iv != nil || live.Bytes() != nil && &live.Bytes()[0] == &r.Bytes()[0] {
			if !fn(View{r}) {
				return nil
			}
		}
		off += uint64(r.PaddedSize())
	}
	return nil
}
