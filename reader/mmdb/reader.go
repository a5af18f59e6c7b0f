// Package mmdb reads MaxMind DB (.mmdb) files: it maps them into memory,
// checks them, and looks addresses up decoding only the record fields a
// caller asks for.
//
// # Basic use
//
//	r, err := mmdb.Open("assets.mmdb")
//	...
//	defer r.Close()
//	fields, err := mmdb.CompileFields("country.iso_code", "city.names.en", "location.latitude")
//	out := make([]mmdb.Value, fields.Len())
//	m, err := r.LookupFields(netip.MustParseAddr("10.20.3.4"), fields, out)
//	if m.Found() { fmt.Println(m.Prefix(), out[0].String(), out[2].Float()) }
//
// # Performance
//
// LookupFields walks the record once, visiting only the map keys on the
// compiled paths, and stops as soon as every path below a map was seen. It
// does not allocate: string values alias the mapping (Value.Bytes,
// Value.UnsafeString) and must be copied to outlive the Reader.
// LookupFieldsBatch walks many addresses together; LookupFieldsCached adds
// a RecordCache (one per goroutine), so that a record many networks share
// is decoded once.
//
// # Checks
//
// Open checks what reading needs: the metadata, the search tree bounds and
// the data section separator. Verify adds the full maxminddb-golang
// verification (every node and record): it accepts every valid MaxMind DB.
// Findings reports what particular readers refuse in a valid file (the
// metadata types libmaxminddb checks, Elasticsearch's database_type scan,
// the database types of typed GeoIP2 readers). Files from untrusted
// sources should be verified once before use; no input makes the package
// panic.
//
// # Thread safety
//
// Lookups are safe for concurrent use. Close must not run concurrently with
// lookups.
package mmdb

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"sync/atomic"

	"github.com/oschwald/maxminddb-golang/v2"

	damage "github.com/lutkit/lutkit/internal/corrupt"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// Reader is an open MMDB file.
type Reader struct {
	db       *maxminddb.Reader
	buf      []byte  // the whole file
	data     section // the data section
	meta     Metadata
	tree     searchTree
	metaOff  int // offset of the metadata map (after the marker)
	unmapped *atomic.Bool
	mapped   bool
}

// Metadata is the file's metadata.
type Metadata = maxminddb.Metadata

// Option configures Open and OpenBytes.
type Option func(*options)

type options struct{ verify bool }

// WithVerify makes Open and OpenBytes run Verify before returning.
func WithVerify() Option { return func(o *options) { o.verify = true } }

// Open maps the file at path read-only and opens it. If the file system
// cannot map files, the file is read into memory instead. A path that is
// not a regular file (a named pipe, a directory, a device) is refused at
// once with a *fsutil.NotRegularError.
func Open(path string, opts ...Option) (*Reader, error) {
	f, st, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int(st.Size())
	if int64(size) != st.Size() {
		return nil, fmt.Errorf("%s: file too large", path)
	}
	if size == 0 {
		return nil, damage.Errorf("%s: file is empty", path)
	}
	buf, err := mapFile(f, size)
	mapped := err == nil
	if errors.Is(err, errors.ErrUnsupported) {
		buf = make([]byte, size)
		_, err = io.ReadFull(f, buf)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := OpenBytes(buf, opts...)
	if err != nil {
		if mapped {
			_ = unmapFile(buf)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if mapped {
		r.mapped = true
		flag := r.unmapped
		runtime.AddCleanup(r, func(b []byte) {
			if flag.CompareAndSwap(false, true) {
				_ = unmapFile(b)
			}
		}, buf)
	}
	return r, nil
}

// OpenBytes opens an MMDB held in memory. The Reader keeps b, which must not
// change while the Reader is in use.
func OpenBytes(b []byte, opts ...Option) (r *Reader, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	metaOff, err := findMetadata(b)
	if err != nil {
		return nil, damage.Mark(err)
	}
	if err := checkMetadataShape(section(b[metaOff:])); err != nil {
		return nil, damage.Mark(err)
	}
	db, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, damage.Mark(err)
	}
	m := db.Metadata
	treeSize := m.NodeCount * (m.RecordSize / 4)
	dataStart := treeSize + 16
	dataEnd := uint(metaOff - len(metadataMarker))
	if dataStart > dataEnd {
		db.Close()
		return nil, damage.New("invalid MMDB: search tree overlaps the metadata")
	}
	for _, c := range b[treeSize:dataStart] {
		if c != 0 {
			db.Close()
			return nil, damage.New("invalid MMDB: non-zero byte in the data section separator")
		}
	}
	r = &Reader{
		db:       db,
		buf:      b,
		data:     section(b[dataStart:dataEnd:dataEnd]),
		meta:     m,
		metaOff:  metaOff,
		unmapped: &atomic.Bool{},
	}
	if err := r.tree.init(b, m); err != nil {
		db.Close()
		return nil, damage.Mark(err)
	}
	if len(r.tree.nodes) >= v4TopMin {
		r.tree.buildV4Top()
	}
	if o.verify {
		if err := r.Verify(); err != nil {
			db.Close()
			return nil, err
		}
	}
	return r, nil
}

// v4TopMin is the search tree size from which IPv4 lookups resolve their
// first 16 bits through a table instead of 16 node reads.
const v4TopMin = 4 << 20

// Close releases the file mapping. Values that alias it become invalid.
func (r *Reader) Close() error {
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db = nil
	r.data = nil
	if r.mapped && r.unmapped.CompareAndSwap(false, true) {
		if uerr := unmapFile(r.buf); err == nil {
			err = uerr
		}
	}
	r.buf = nil
	r.tree = searchTree{}
	return err
}

// Metadata returns the file's metadata.
func (r *Reader) Metadata() Metadata { return r.meta }

// Bytes returns the whole file. It aliases the mapping.
func (r *Reader) Bytes() []byte { return r.buf }

// DB returns the underlying maxminddb-golang reader, for full-record decoding
// and network iteration.
func (r *Reader) DB() *maxminddb.Reader { return r.db }

// Match is the outcome of a lookup.
type Match struct {
	ip     netip.Addr
	offset uint  // data-section offset of the record, or notFound
	plen   uint8 // bits of the search tree walked
	found  bool
	ok     bool // the lookup ran (the zero Match is not found, no prefix)
}

// Found reports whether the address has a record.
func (m Match) Found() bool { return m.found }

// Prefix returns the network of the matched record (or of the empty tree
// region when not found). IPv4 addresses give IPv4 prefixes.
func (m Match) Prefix() netip.Prefix {
	if !m.ok {
		return netip.Prefix{}
	}
	n := int(m.plen)
	if m.ip.Is4() {
		if n < 96 {
			return netip.PrefixFrom(netip.IPv6Unspecified(), n)
		}
		n -= 96
	}
	p, _ := m.ip.Prefix(n)
	return p
}

// Offset returns the record's data-section offset: equal offsets are equal
// records.
func (m Match) Offset() uintptr { return uintptr(m.offset) }

var errClosed = errors.New("mmdb: reader is closed")

// LookupFields looks ip up and stores path i of fields in out[i] (out must
// hold fields.Len() values; missing paths get the zero Value). It does not
// allocate.
func (r *Reader) LookupFields(ip netip.Addr, fields *Fields, out []Value) (Match, error) {
	if r.db == nil {
		return Match{}, errClosed
	}
	if len(out) < len(fields.paths) {
		return Match{}, fmt.Errorf("mmdb: %d values for %d fields", len(out), len(fields.paths))
	}
	clear(out)
	m, err := r.lookup(ip)
	if err != nil || !m.found {
		return m, err
	}
	err = r.data.extract(m.offset, &fields.root, out, 0)
	runtime.KeepAlive(r)
	return m, err
}

// LookupRecord looks ip up and decodes its whole record (maps become
// map[string]any). The record is nil when the address is not found.
func (r *Reader) LookupRecord(ip netip.Addr) (Match, any, error) {
	if r.db == nil {
		return Match{}, nil, errClosed
	}
	m, err := r.lookup(ip)
	if err != nil {
		return Match{}, nil, err
	}
	if !m.found {
		return m, nil, nil
	}
	var v any
	if err := r.db.LookupOffset(m.Offset()).Decode(&v); err != nil {
		return Match{}, nil, err
	}
	return m, v, nil
}

// RecordAt decodes the record at a data-section offset (as returned by
// Match.Offset) keeping the exact stored type of every value, for checks
// that care about types, not just values.
func (r *Reader) RecordAt(offset uintptr) (Typed, error) {
	if r.db == nil {
		return Typed{}, errClosed
	}
	t, _, err := r.data.typed(uint(offset), 0)
	return t, err
}

// DataSection returns the data section. It aliases the mapping.
func (r *Reader) DataSection() []byte { return r.data }

// MetadataHasPointers reports whether the metadata map uses pointers, which
// some readers mishandle.
func (r *Reader) MetadataHasPointers() (bool, error) {
	if r.db == nil {
		return false, errClosed
	}
	s := section(r.buf[r.metaOff:])
	found := false
	var walk func(off uint, depth int) (uint, error)
	walk = func(off uint, depth int) (uint, error) {
		if depth > maxDepth {
			return 0, errDepth
		}
		kind, size, data, err := s.ctrl(off)
		if err != nil {
			return 0, err
		}
		switch kind {
		case KindPointer:
			found = true
			return data, nil
		case KindMap, KindArray:
			n := size
			if kind == KindMap {
				n *= 2
			}
			off = data
			for range n {
				if off, err = walk(off, depth+1); err != nil {
					return 0, err
				}
			}
			return off, nil
		}
		return s.end(kind, size, data, depth)
	}
	_, err := walk(0, 0)
	return found, err
}
