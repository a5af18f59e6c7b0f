// Package formattest holds helpers for tests that damage .lut tables.
package formattest

import (
	"encoding/binary"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/format"
)

// Reseal rewrites the checksums of section kind and of the section table
// in b (a table), so that damage there passes every checksum and only the
// structural checks of a reader can find it.
func Reseal(t testing.TB, b []byte, kind uint32) {
	t.Helper()
	h, err := format.DecodeHeader(b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	table := b[h.SectionsOff : h.SectionsOff+uint64(h.SectionCount)*format.SectionEntrySize]
	for e := table; len(e) > 0; e = e[format.SectionEntrySize:] {
		if le.Uint32(e) == kind {
			off, n := le.Uint64(e[8:]), le.Uint64(e[16:])
			le.PutUint64(e[24:], xxh3.Hash(b[off:off+n]))
		}
	}
	h.SectionsSum = xxh3.Hash(table)
	h.Encode(b[:format.HeaderSize])
}
