package reader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// TestRecordsDamage checks that Records reports a damaged table instead of
// skipping or changing rows: a DATA section that does not match its
// checksum, and a key changed with the checksums written to match it (as a
// writer with a bug would write them), whose record no longer finds itself.
func TestRecordsDamage(t *testing.T) {
	src := rowsOf([]string{"k", "v"}, []string{"alpha", "1"}, []string{"bravo", "2"}, []string{"charlie", "3"})
	tbl, path := build(t, src, compile.Options{Key: []string{"k"}})
	var data format.Section
	for _, s := range tbl.Sections() {
		if s.Kind == format.SectionData {
			data = s
		}
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(good[data.Off:data.Off+data.Len], []byte("bravo"))
	if at < 0 {
		t.Fatal("key bravo not in the DATA section")
	}
	at += int(data.Off)

	records := func(b []byte) error {
		t.Helper()
		d, err := reader.OpenBytes(b)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var keys []string
		err = d.Records(func(v reader.View) bool { keys = append(keys, string(v.Key())); return true })
		if err == nil {
			t.Errorf("Records of a damaged table gave %q and no error", keys)
		}
		return err
	}

	flipped := bytes.Clone(good)
	flipped[at+4] ^= 1 // bravo -> bravn
	if err := records(flipped); !errors.Is(err, format.ErrCorrupt) || !strings.Contains(err.Error(), "DATA section checksum mismatch") {
		t.Errorf("flipped key: %v", err)
	}

	resummed := bytes.Clone(flipped)
	resumData(t, resummed)
	if err := records(resummed); !errors.Is(err, format.ErrCorrupt) || !strings.Contains(err.Error(), `key "bravn" does not find its own row`) {
		t.Errorf("flipped key, checksums rewritten: %v", err)
	}
}

// resumData rewrites the checksums of table file d after a change to its
// DATA section (its section entry's, the section table's, the header's).
func resumData(t *testing.T, d []byte) {
	t.Helper()
	h, err := format.DecodeHeader(d, int64(len(d)))
	if err != nil {
		t.Fatal(err)
	}
	table := d[h.SectionsOff : h.SectionsOff+uint64(h.SectionCount)*format.SectionEntrySize]
	for i := 0; i < int(h.SectionCount); i++ {
		e := table[i*format.SectionEntrySize:]
		if binary.LittleEndian.Uint32(e) == format.SectionData {
			off, n := binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
			binary.LittleEndian.PutUint64(e[24:], xxh3.Hash(d[off:off+n]))
		}
	}
	h.SectionsSum = xxh3.Hash(table)
	h.Encode(d[:format.HeaderSize])
}
