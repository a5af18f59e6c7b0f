// Package compile turns tabular sources into .lut tables: it reads rows
// from a source.Reader, validates them, and writes the table file in one
// streaming pass: row data goes straight to the output file, and each row
// keeps a 24-byte entry (hash, offset, line). A table of up to spillRows
// rows keeps its entries in memory and gets one perfect hash; a larger one
// writes them to partition files and gets a bucketed index
// (partitioned.go, format/buckets.go), built partition by partition, in
// parallel, in memory bounded by a partition. The source is parsed by a goroutine of its own
// (rows.go).
//
// The output is deterministic: the same rows and options give the same
// bytes. Files are written atomically: a temporary file in the target
// directory, fsync, rename, fsync of the directory.
//
// Options is the serialisable spec of a .lut table ("lut compile" flags
// and tables.yaml decode into it); File and Write validate it
// (Options.Validate) and apply its defaults in one place. Errors of the
// source come back as *SourceError, naming the source themselves.
package compile

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/internal/version"
)

// Version is the writer recorded in every table's META section: the
// program's version and commit, as its --version prints them (so that
// lut inspect and lut --version agree). A table is reproducible byte for
// byte by the same build of lut.
var Version = version.Writer()

// DefaultSeed is the first hash seed tried.
const DefaultSeed = 0x6c75746b69740001

// SourceError is an error of the source reader (a bad row, a failed
// read) or about one of the source's rows (a key that cannot be built),
// as File and Write return it. Its text names the source (file:line: for
// a *source.RowError), so callers need not name it again. Errors of the
// compiler itself (an unknown column, a duplicate key, a failed write)
// are not SourceErrors.
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }

// Unwrap returns the reader's error.
func (e *SourceError) Unwrap() error { return e.Err }

// Stats describes a finished compile.
type Stats struct {
	Rows        int64 // rows in the table
	SourceRows  int64 // rows read from the source, bad rows included
	SkippedRows int64 // bad rows skipped with SkipBadRows
	Duplicates  int64 // rows dropped by OnDuplicate first/last
	BadRows     []error
	Bytes       int64 // size of the table file
	Seed        uint64

	// Warnings are the rows compiled with a warning, at most
	// MaxBadRowErrors of them; Unanchored counts the patterns warned
	// about as run on every lookup (Options.StrictPatterns).
	Warnings   []error
	Unanchored int64
}

// BuildTimeFromEnv returns the time given by SOURCE_DATE_EPOCH, or the zero
// time when it is unset.
func BuildTimeFromEnv() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", v)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// Meta is the META section: how the table was built.
type Meta = format.Meta

type entry struct {
	hash uint64
	off  uint64 // record offset in DATA
	at   int64  // where the row is in the source, in source order (batchRow.at)
	// lo and hi are the inclusive bounds of a range or time-bounded
	// row; rep is the record offset of the first row of its key.
	lo, hi int64
	rep    uint64
}

// File compiles src into a table at path, atomically (see
// fsutil.WriteFile): on any error, and if the process dies, nothing is
// left at path (a stale temporary file named .path.tmp-* may remain after
// a crash). An error syncing the directory after the rename is returned.
func File(src source.Reader, path string, opts Options) (*Stats, error) {
	var st *Stats
	err := fsutil.WriteFile(path, func(f *os.File) (err error) {
		st, err = Write(src, f, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// countingWriter tracks the offset and checksum of the section being
// written.
type countingWriter struct {
	w       *bufio.Writer
	f       *os.File
	off     uint64
	sum     *xxh3.Hasher
	flushed uint64 // offset up to which writeback has been started
}

// writebackChunk is how much written data accumulates before the compiler
// asks the kernel to start writing it to disk.
const writebackChunk = 32 << 20

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.off += uint64(n)
	if c.sum != nil {
		_, _ = c.sum.Write(p[:n]) // a hash takes every write
	}
	if buffered := uint64(c.w.Buffered()); c.off-buffered-c.flushed >= writebackChunk {
		end := c.off - buffered
		startWriteback(c.f, int64(c.flushed), int64(end-c.flushed))
		c.flushed = end
	}
	return n, err
}

func (c *countingWriter) pad() error {
	n := (format.SectionAlign - c.off%format.SectionAlign) % format.SectionAlign
	_, err := c.Write(make([]byte, n))
	return err
}

// Write compiles src into f, which must be empty and is left open. It
// writes f sequentially, then rewrites the header at offset 0.
func Write(src source.Reader, f *os.File, opts Options) (*Stats, error) {
	c, err := newCompiler(src, opts)
	if err != nil {
		return nil, err
	}
	return c.run(f)
}

type compiler struct {
	src     source.Reader
	opts    Options
	cols    []string            // stored columns
	colIdx  []int               // source index of each stored column
	types   []format.ColumnType // type of each stored column; nil: all text
	keyIdx  []int               // source index of each key column
	nsrc    int
	kind    format.MatchKind // the match kind (suffix tables: its keys and section)
	labels  uint64           // suffix tables: the label mask of the keys written
	entries []entry          // the entries of a table of up to spillRows rows
	spill   *spiller         // the entries of a larger one
	stats   Stats
	match   matcher      // range and time-bounded tables
	lits    *literalKeys // wildcard and pattern tables: the keys written
	// positioned is set for a source with byte positions
	// (source.FieldPositioner), valuesPlaced for one that places its
	// values (source.ValuePositioner); cur is the row being written
	// (position.go).
	positioned   bool
	valuesPlaced bool
	cur          rowAt
}

func newCompiler(src source.Reader, opts Options) (*compiler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	srcCols := src.Columns()
	index := make(map[string]int, len(srcCols))
	for i, c := range srcCols {
		index[c] = i
	}
	find := func(name, what string) (int, error) {
		if i, ok := index[name]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("%s is not in the source (columns: %s)", fmt.Sprintf(what, name), strings.Join(srcCols, ", "))
	}
	c := &compiler{src: src, opts: opts, nsrc: len(srcCols)}
	_, c.positioned = src.(source.FieldPositioner)
	_, c.valuesPlaced = src.(source.ValuePositioner)
	c.kind, _ = format.ParseMatchKind(opts.Match) // checked by Validate
	if c.kind == format.MatchWildcard || c.kind == format.MatchPattern {
		c.lits = &literalKeys{}
	}
	for _, k := range opts.Key {
		i, err := find(k, "key column %q")
		if err != nil {
			return nil, err
		}
		c.keyIdx = append(c.keyIdx, i)
	}
	if len(opts.Columns) == 0 {
		c.cols = slices.Clone(srcCols)
		for i := range srcCols {
			c.colIdx = append(c.colIdx, i)
		}
	} else {
		for _, name := range opts.Columns {
			i, err := find(name, "column %q (from --columns)")
			if err != nil {
				return nil, err
			}
			c.cols = append(c.cols, name)
			c.colIdx = append(c.colIdx, i)
		}
	}
	if len(c.cols) == 0 {
		return nil, errors.New("the table would have no columns")
	}
	if typed, ok := src.(source.Typed); ok && opts.SourceTypes {
		st := typed.ColumnTypes()
		for i, si := range c.colIdx {
			t, _ := format.ParseColumnType(st[si]) // "" and unknown: text
			if t == format.TypeText {
				continue
			}
			if c.types == nil {
				c.types = make([]format.ColumnType, len(c.cols))
			}
			c.types[i] = t
		}
	}
	if len(opts.ColumnTypes) > 0 {
		if c.types == nil {
			c.types = make([]format.ColumnType, len(c.cols))
		}
		for name, ts := range opts.ColumnTypes {
			i := slices.Index(c.cols, name)
			if i < 0 {
				return nil, fmt.Errorf("column %q (from the column types) is not among the stored columns (%s)", name, strings.Join(c.cols, ", "))
			}
			c.types[i], _ = format.ParseColumnType(ts) // checked by Validate
		}
	}
	if err := c.match.init(c, index, find); err != nil {
		return nil, err
	}
	return c, nil
}

// checkTypes checks the values of a row's typed columns.
func (c *compiler) checkTypes(values [][]byte, line int64) error {
	for i, t := range c.types {
		if !format.ValidValue(t, values[i]) {
			return c.fieldError(line, c.colIdx[i],
				fmt.Errorf("column %q is of type %s: %q is not a valid %s value", c.cols[i], t, truncate(values[i]), t))
		}
	}
	return nil
}

// truncate shortens a value quoted in an error.
func truncate(v []byte) []byte {
	if len(v) > 64 {
		return append(v[:60:60], "..."...)
	}
	return v
}

// key builds the normalised key of a row into dst.
func (c *compiler) key(dst []byte, fields [][]byte) ([]byte, error) {
	if c.kind == format.MatchSuffix {
		return c.suffixKey(dst, fields)
	}
	if c.lits != nil {
		return c.literalKey(dst, fields)
	}
	for i, k := range c.keyIdx {
		v := fields[k]
		if len(c.keyIdx) > 1 {
			if bytes.IndexByte(v, format.KeySeparator) >= 0 {
				return nil, &keyPartError{field: k, err: fmt.Errorf("key column %q contains the byte 0x1f, which separates composite key parts", c.opts.Key[i])}
			}
			if i > 0 {
				dst = append(dst, format.KeySeparator)
			}
		}
		if c.opts.FoldCase {
			dst = format.FoldKey(dst, v)
		} else {
			dst = append(dst, v...)
		}
	}
	return dst, nil
}

// keyPartError is a composite key's part that cannot be one, in the
// source's column field (0-based).
type keyPartError struct {
	field int
	err   error
}

func (e *keyPartError) Error() string { return e.err.Error() }

// badRow counts and keeps a bad row with SkipBadRows, and otherwise
// returns err, an error of the source or about one of its rows, as a
// *SourceError.
func (c *compiler) badRow(err error) error {
	if !c.opts.SkipBadRows || !source.Skippable(err) {
		return &SourceError{Err: err}
	}
	c.stats.SkippedRows++
	if len(c.stats.BadRows) < c.opts.MaxBadRowErrors {
		c.stats.BadRows = append(c.stats.BadRows, err)
	}
	return nil
}

func (c *compiler) run(f *os.File) (*Stats, error) {
	// 2 MiB writes at 2 MiB-aligned offsets let the page cache hold the
	// file in huge folios, which readers can map with huge pages.
	bw := bufio.NewWriterSize(f, 2<<20)
	w := &countingWriter{w: bw, f: f}
	var sections []format.Section
	// Header placeholder, rewritten at the end.
	if _, err := w.Write(make([]byte, format.HeaderSize)); err != nil {
		return nil, err
	}
	section := func(kind uint32, body func() error) error {
		if err := w.pad(); err != nil {
			return err
		}
		start := w.off
		w.sum = xxh3.New()
		if err := body(); err != nil {
			var se *SourceError
			var re *source.RowError
			if errors.As(err, &se) || errors.As(err, &re) {
				return err // placed in the source, not in the table
			}
			return fmt.Errorf("writing %s section: %w", format.SectionName(kind), err)
		}
		sections = append(sections, format.Section{Kind: kind, Off: start, Len: w.off - start, Checksum: w.sum.Sum64()})
		w.sum = nil
		return nil
	}
	// Key columns are addressed by their index among the stored columns.
	schema := &format.Schema{Columns: c.cols, Types: c.types}
	for _, k := range c.opts.Key {
		i := slices.Index(c.cols, k)
		if i < 0 {
			return nil, fmt.Errorf("key column %q must be among the stored columns (add it to --columns)", k)
		}
		schema.Key = append(schema.Key, i)
	}
	if err := section(format.SectionSchema, func() error {
		_, err := w.Write(format.AppendSchema(nil, schema))
		return err
	}); err != nil {
		return nil, err
	}
	dataStart := uint64(0)
	if err := section(format.SectionData, func() error {
		dataStart = w.off
		return c.writeData(w, dataStart)
	}); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	dataLen := w.off - dataStart
	if c.spill != nil {
		defer c.spill.remove()
		if err := c.spill.finish(); err != nil {
			return nil, err
		}
		return c.finishPartitioned(f, w, bw, section, &sections, dataFile{f, dataStart, dataLen, len(c.cols)})
	}
	if err := c.dedupe(f, dataStart, dataLen); err != nil {
		return nil, err
	}
	// Build the perfect hash. Entries are sorted by hash, so the hashes are
	// passed in sorted order.
	hashes := make([]uint64, len(c.entries))
	var rehashErr error
	mphf, seed, err := format.BuildMPHFRetry(c.opts.Seed, func(seed uint64) []uint64 {
		if seed != c.opts.Seed && rehashErr == nil {
			rehashErr = c.rehash(f, dataStart, dataLen, seed)
		}
		for i, e := range c.entries {
			hashes[i] = e.hash
		}
		return hashes
	})
	hashes = nil
	if err != nil {
		return nil, err
	}
	if rehashErr != nil {
		return nil, rehashErr
	}
	return c.finish(f, w, bw, section, &sections, mphf, seed, 0, func() error {
		slots := make([]byte, 8*len(c.entries))
		for _, e := range c.entries {
			pos := mphf.Index(e.hash)
			binary.LittleEndian.PutUint64(slots[8*pos:], format.Slot(e.off, format.Fingerprint(e.hash)))
		}
		_, err := w.Write(slots)
		return err
	})
}

// tableIndex is the index of a table, as the MPHF section holds it: a
// perfect hash (format.MPHF) or the bucket table of a bucketed index
// (format.Buckets).
type tableIndex interface {
	Len() uint64
	Size() int
	AppendTo([]byte) []byte
}

// sectionFunc writes one section: its body, then its table entry.
type sectionFunc func(kind uint32, body func() error) error

// finishPartitioned builds the bucketed index of a spilled table and
// writes its MPHF section (the bucket table), its SLOTS section (the
// buckets) and the rest of the file.
func (c *compiler) finishPartitioned(f *os.File, w *countingWriter, bw *bufio.Writer, section sectionFunc, sections *[]format.Section, data dataFile) (*Stats, error) {
	mphf, seed, err := c.partitionedHash(data)
	if err != nil {
		return nil, err
	}
	return c.finish(f, w, bw, section, sections, mphf, seed, format.FeatureBucketedSlots, func() error { return c.writeSlots(w) })
}

// finish writes the MPHF section, the SLOTS section (writeSlots writes
// its body), the META section, the section table, the footer and the
// header of a table whose index is mphf (a perfect hash or a bucket
// table), under seed; incompat holds the feature bits the index needs.
func (c *compiler) finish(f *os.File, w *countingWriter, bw *bufio.Writer, section sectionFunc, sections *[]format.Section, mphf tableIndex, seed uint64, incompat uint32, writeSlots func() error) (*Stats, error) {
	if err := section(format.SectionMPHF, func() error {
		_, err := w.Write(mphf.AppendTo(make([]byte, 0, mphf.Size())))
		return err
	}); err != nil {
		return nil, err
	}
	if err := section(format.SectionSlots, writeSlots); err != nil {
		return nil, err
	}
	c.stats.Seed = seed
	rows := mphf.Len()
	c.stats.Rows = int64(rows)
	if err := c.matchSections(section, w); err != nil {
		return nil, err
	}
	if c.match.on() {
		// A range or time-bounded table is never spilled (addEntry):
		// its index is a perfect hash.
		secs, err := c.match.sections(c, mphf.(*format.MPHF))
		if err != nil {
			return nil, err
		}
		for _, sec := range secs {
			if err := section(sec.kind, func() error { _, err := w.Write(sec.body); return err }); err != nil {
				return nil, err
			}
		}
		c.stats.Rows = int64(len(c.match.rows))
	}
	meta := Meta{
		Writer: Version, Key: c.opts.Key, FoldCase: c.opts.FoldCase, OnDuplicate: c.opts.OnDuplicate,
		SourceRows: c.stats.SourceRows, SkippedRows: c.stats.SkippedRows, Duplicates: c.stats.Duplicates,
	}
	c.match.meta(&c.opts, &meta)
	if c.lits != nil {
		meta.Match = c.kind.String()
	}
	if err := section(format.SectionMeta, func() error {
		b, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}); err != nil {
		return nil, err
	}
	if err := w.pad(); err != nil {
		return nil, err
	}
	tableOff := w.off
	var table []byte
	for _, s := range *sections {
		table = format.AppendSection(table, s)
	}
	footer := binary.LittleEndian.AppendUint64(nil, tableOff)
	footer = append(footer, format.EndMagic...)
	if _, err := w.Write(table); err != nil {
		return nil, err
	}
	if _, err := w.Write(footer); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	h := format.Header{
		Major: format.MajorVersion, Minor: format.MinorVersion,
		Columns: uint32(len(c.cols)), Rows: rows, Seed: seed, Incompat: incompat,
		SectionsOff: tableOff, SectionCount: uint32(len(*sections)), HashAlgorithm: format.HashXXH3,
		FileSize: w.off, SectionsSum: xxh3.Hash(table),
	}
	if c.opts.FoldCase {
		h.Incompat |= format.FeatureFoldCase
	}
	if (&format.Schema{Types: c.types}).Typed() {
		h.Incompat |= format.FeatureColumnTypes
		h.Minor = format.MinorTypes
	}
	h.Incompat |= c.match.features() | c.matchFeature()
	if h.Incompat&(format.FeatureRange|format.FeatureTimeBound|format.FeatureSuffix|format.FeaturePartitionedMPHF|format.FeatureWildcard|format.FeaturePattern) != 0 {
		h.Minor = format.MinorMatch // = MinorPartitioned: 1.2
	}
	if h.Incompat&format.FeatureBucketedSlots != 0 {
		h.Minor = format.MinorBuckets
	}
	if !c.opts.BuildTime.IsZero() {
		h.BuildTime = c.opts.BuildTime.Unix()
	}
	hb := make([]byte, format.HeaderSize)
	h.Encode(hb)
	if _, err := f.WriteAt(hb, 0); err != nil {
		return nil, err
	}
	c.stats.Bytes = int64(w.off)
	return &c.stats, nil
}

// writeData streams the records of every row.
func (c *compiler) writeData(w *countingWriter, dataStart uint64) error {
	var (
		keyBuf []byte
		rec    []byte
		fields [][]byte
		values = make([][]byte, len(c.colIdx))
	)
	rows := readRows(c.src, c.keyIdx[0], c.opts.Progress)
	defer rows.close()
	for b := range rows.batches {
		for i := range b.rows {
			r := &b.rows[i]
			c.stats.SourceRows++
			if r.err != nil {
				if err := c.badRow(r.err); err != nil {
					return err
				}
				continue
			}
			line := r.line
			if r.n != c.nsrc {
				return fmt.Errorf("row at line %d has %d fields, want %d", line, r.n, c.nsrc)
			}
			fields = b.fields(r, fields)
			c.cur = rowAt{b, r, fields}
			var err error
			keyBuf, err = c.key(keyBuf[:0], fields)
			if err != nil {
				var kp *keyPartError
				switch {
				case errors.As(err, &kp):
					err = c.fieldError(line, kp.field, kp.err)
				case c.kind != format.MatchExact:
					err = c.fieldError(line, c.keyIdx[0], err) // one key column: the error is in it
				default:
					err = &source.RowError{File: c.opts.SourceName, Line: line, Err: err}
				}
				if err := c.badRow(err); err != nil {
					return err
				}
				continue
			}
			for i, s := range c.colIdx {
				values[i] = fields[s]
			}
			if c.types != nil {
				if err := c.checkTypes(values, line); err != nil {
					if err := c.badRow(err); err != nil {
						return err
					}
					continue
				}
			}
			var lo, hi int64
			if c.match.on() {
				if lo, hi, err = c.match.bounds(c, fields, line); err != nil {
					if err := c.badRow(err); err != nil {
						return err
					}
					continue
				}
			}
			off := w.off - dataStart
			if off >= format.MaxDataSize {
				return fmt.Errorf("table data exceeds %d GiB, the largest a table addresses", format.MaxDataSize>>30)
			}
			rec = format.AppendRecord(rec[:0], keyBuf, values)
			if _, err := w.Write(rec); err != nil {
				return err
			}
			if err := c.addEntry(w.f, entry{hash: format.HashKey(keyBuf, c.opts.Seed), off: off, at: r.at, lo: lo, hi: hi}); err != nil {
				return err
			}
			if c.kind == format.MatchSuffix {
				c.labels |= format.LabelBit(format.Labels(keyBuf))
			}
			if c.lits != nil {
				c.addLiteral(off, keyBuf, line)
			}
		}
		c.cur = rowAt{}
		rows.free <- b
	}
	return nil
}

// addEntry keeps the entry of a row: in memory, or, past spillRows rows,
// in the spill files, which then take the rows kept so far too.
func (c *compiler) addEntry(f *os.File, e entry) error {
	if c.spill != nil {
		return c.spill.add(e)
	}
	c.entries = append(c.entries, e)
	if len(c.entries) < spillRows || c.match.on() || c.lits != nil {
		// Range and time-bounded tables keep their entries (and bounds)
		// in memory, wildcard and pattern tables their keys.
		return nil
	}
	s, err := newSpiller(spillDir(f))
	if err != nil {
		return err
	}
	c.spill = s
	for _, e := range c.entries {
		if err := s.add(e); err != nil {
			return err
		}
	}
	c.entries = nil
	return nil
}

// readRecord reads the record at off of the DATA section back from f.
func readRecord(f *os.File, dataStart, dataLen, off uint64, cols int, buf []byte) (format.Record, error) {
	// Records are short; read the header first, then the rest.
	n := min(uint64(4096), dataLen-off)
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := f.ReadAt(buf, int64(dataStart+off)); err != nil {
		return format.Record{}, err
	}
	if r, ok := format.ParseRecord(buf, 0, cols); ok {
		return r, nil
	}
	buf = slices.Grow(buf[:0], int(dataLen-off))[:dataLen-off]
	if _, err := f.ReadAt(buf, int64(dataStart+off)); err != nil {
		return format.Record{}, err
	}
	r, ok := format.ParseRecord(buf, 0, cols)
	if !ok {
		return format.Record{}, fmt.Errorf("internal error: cannot read back the record at %d (this is a bug)", off)
	}
	return r, nil
}

// dedupe sorts the entries by hash and resolves duplicate keys (see
// dedupeEntries).
func (c *compiler) dedupe(f *os.File, dataStart, dataLen uint64) error {
	if c.match.on() {
		return c.groupKeys(f, dataStart, dataLen)
	}
	out, dups, err := dedupeEntries(c.entries, dataFile{f, dataStart, dataLen, len(c.cols)}, c.opts.OnDuplicate)
	if err != nil {
		return c.placeDuplicate(err)
	}
	c.entries = out
	c.stats.Duplicates += dups
	return nil
}

// duplicateError is a key found in two rows (DuplicateError), as
// dedupeSorted finds it: first and second are where the rows are kept
// (entry.at); placeDuplicate turns them into their lines and columns.
type duplicateError struct {
	key           string
	first, second int64
	// The rows' lines and, in a source that places its values, the
	// columns of their keys (0 in another).
	firstLine, secondLine int64
	firstCol, secondCol   int
}

func (e *duplicateError) Error() string {
	where := fmt.Sprintf("lines %d and %d", e.firstLine, e.secondLine)
	if e.firstLine == e.secondLine && e.firstCol > 0 {
		where = fmt.Sprintf("line %d, columns %d and %d", e.firstLine, e.firstCol, e.secondCol)
	}
	return fmt.Sprintf("duplicate key %q at %s (use --on-duplicate first|last to keep one)", e.key, where)
}

// placeDuplicate places a duplicateError in the source, at the second
// row's first key field, as the other row errors are.
func (c *compiler) placeDuplicate(err error) error {
	var de *duplicateError
	if !errors.As(err, &de) {
		return err
	}
	line, col := c.laterPlace(de.second, c.keyIdx[0])
	de.firstLine, de.firstCol = c.laterPlace(de.first, c.keyIdx[0])
	de.secondLine, de.secondCol = line, col
	if !c.valuesPlaced {
		// Rows of such a source do not share lines: the text names them
		// by line alone.
		de.firstCol, de.secondCol = 0, 0
	}
	if c.opts.SourceName == "" {
		return err
	}
	return &source.RowError{File: c.opts.SourceName, Line: line, Column: col, Err: err}
}

// dataFile is the DATA section of the table being written, read back.
type dataFile struct {
	f          *os.File
	start, len uint64
	cols       int
}

func (d dataFile) record(off uint64, buf []byte) (format.Record, error) {
	return readRecord(d.f, d.start, d.len, off, d.cols, buf)
}

// dedupeEntries sorts entries by hash (then source order) and resolves
// duplicate keys: entries with equal hashes are compared by key, read back from
// DATA. It returns the entries kept, in place, and how many rows were
// dropped as duplicates.
func dedupeEntries(entries []entry, data dataFile, onDuplicate string) ([]entry, int64, error) {
	slices.SortFunc(entries, compareEntries)
	return dedupeSorted(entries, data, onDuplicate)
}

// compareEntries orders entries by hash, then source order: the order in
// which dedupeSorted takes them.
func compareEntries(a, b entry) int {
	return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.at, b.at))
}

// dedupeSorted is dedupeEntries of entries already in the order of
// compareEntries.
func dedupeSorted(entries []entry, data dataFile, onDuplicate string) ([]entry, int64, error) {
	var bufA, bufB []byte
	var dups int64
	out := entries[:0]
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].hash == entries[i].hash {
			j++
		}
		if j == i+1 {
			out = append(out, entries[i])
			i = j
			continue
		}
		// A run of equal hashes: group equal keys (almost always all of
		// them; distinct keys with one hash are handled by a reseed of a
		// perfect hash, and share their two buckets in a bucketed index,
		// where a lookup compares the keys).
		run := entries[i:j]
		kept := make([]bool, len(run))
		for a := range run {
			ra, err := data.record(run[a].off, bufA)
			if err != nil {
				return nil, 0, err
			}
			bufA = ra.Bytes()
			winner := a
			dup := false
			for b := range run {
				if b == a {
					continue
				}
				rb, err := data.record(run[b].off, bufB)
				if err != nil {
					return nil, 0, err
				}
				bufB = rb.Bytes()
				if !bytes.Equal(ra.Key(), rb.Key()) {
					continue
				}
				dup = true
				if onDuplicate == DuplicateError {
					first, second := run[a].at, run[b].at
					if first > second {
						first, second = second, first
					}
					return nil, 0, &duplicateError{key: string(ra.Key()), first: first, second: second}
				}
				if (onDuplicate == DuplicateFirst) == (run[b].at < run[winner].at) {
					winner = b
				}
			}
			if winner == a {
				kept[a] = true
			} else if dup {
				dups++
			}
		}
		for a := range run {
			if kept[a] {
				out = append(out, run[a])
			}
		}
		i = j
	}
	return out, dups, nil
}

// rehash recomputes every entry's hash under seed, reading the keys back
// from the file. Entries keep their order by offset afterwards.
func (c *compiler) rehash(f *os.File, dataStart, dataLen uint64, seed uint64) error {
	var buf []byte
	for i := range c.entries {
		r, err := readRecord(f, dataStart, dataLen, c.entries[i].off, len(c.cols), buf)
		if err != nil {
			return err
		}
		buf = r.Bytes()
		c.entries[i].hash = format.HashKey(r.Key(), seed)
	}
	slices.SortFunc(c.entries, func(a, b entry) int { return cmp.Compare(a.hash, b.hash) })
	return nil
}
