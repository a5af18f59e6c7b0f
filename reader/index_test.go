package reader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/format/formattest"
	"github.com/lutkit/lutkit/reader"
)

// The fixtures hold the keys 0 to 1999 and the names name0 to name1999:
// partitioned.lut was written by the compiler of version 1.2 with a
// partitioned perfect hash, bucketed.lut by today's with a bucketed index
// (both with the spill threshold lowered to 1,000 rows, as the compile
// package's tests lower it).
const fixtureRows = 2000

// TestLargeTableIndexes opens both fixtures: each verifies, carries its
// feature bit, finds every key by Get and by LookupBatch, and finds no
// absent key.
func TestLargeTableIndexes(t *testing.T) {
	for _, tc := range []struct {
		path, version string
		bit           uint32
	}{
		{"testdata/partitioned.lut", "1.2", format.FeaturePartitionedMPHF},
		{"testdata/bucketed.lut", "1.3", format.FeatureBucketedSlots},
	} {
		t.Run(tc.path, func(t *testing.T) {
			tbl, err := reader.Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			h := tbl.Header()
			if h.Incompat&tc.bit == 0 || fmt.Sprintf("%d.%d", h.Major, h.Minor) != tc.version {
				t.Fatalf("version %d.%d, feature bits %#x; want %s with %#x", h.Major, h.Minor, h.Incompat, tc.version, tc.bit)
			}
			if err := tbl.Verify(); err != nil {
				t.Fatal(err)
			}
			if tbl.Rows() != fixtureRows {
				t.Fatalf("%d rows, want %d", tbl.Rows(), fixtureRows)
			}
			var row reader.Row
			keys := make([][]byte, 0, 2*fixtureRows)
			for i := range fixtureRows {
				k := []byte(strconv.Itoa(i))
				if !tbl.Get(k, &row) || string(row.Col(1)) != "name"+string(k) {
					t.Fatalf("Get(%s) = %q", k, row.Col(1))
				}
				absent := []byte(strconv.Itoa(i + fixtureRows))
				if tbl.Get(absent, &row) {
					t.Fatalf("Get(%s) found a row", absent)
				}
				keys = append(keys, k, absent)
			}
			out := make([]reader.View, len(keys))
			if n := tbl.LookupBatch(keys, out); n != fixtureRows {
				t.Fatalf("LookupBatch found %d keys, want %d", n, fixtureRows)
			}
			for i := 0; i < len(keys); i += 2 {
				if got := string(out[i].Col(1)); got != "name"+string(keys[i]) {
					t.Fatalf("LookupBatch(%s) = %q", keys[i], got)
				}
				if out[i+1].Col(0) != nil {
					t.Fatalf("LookupBatch(%s) found a row", keys[i+1])
				}
			}
		})
	}
}

// bucketedFixture returns the bytes of bucketed.lut, its SLOTS section's
// offset and its buckets, as 8 slots each.
func bucketedFixture(t *testing.T) ([]byte, uint64, [][format.BucketEntries]uint64) {
	t.Helper()
	b, s := fixtureSection(t, format.SectionSlots)
	buckets := make([][format.BucketEntries]uint64, s.Len/format.BucketSize)
	for i := range buckets {
		for j := range format.BucketEntries {
			buckets[i][j] = binary.LittleEndian.Uint64(b[s.Off+uint64(i*format.BucketSize+8*j):])
		}
	}
	return b, s.Off, buckets
}

// TestBucketedVerify damages the buckets of bucketed.lut behind intact
// checksums: a key after an empty slot, a key in a bucket it does not
// choose, a key in two slots, a key gone. Verify must name each.
func TestBucketedVerify(t *testing.T) {
	_, _, buckets := bucketedFixture(t)
	// A bucket with a full slot followed by an empty one, and another
	// bucket with an empty slot that is not one of the first bucket's
	// key's choices (the table has many partitions: the last bucket is
	// of another partition than the first).
	full := -1
	for i, bk := range buckets {
		if bk[0] != format.EmptySlot && bk[format.BucketEntries-1] == format.EmptySlot {
			full = i
			break
		}
	}
	if full < 0 {
		t.Fatal("no bucket with full and empty slots")
	}
	used := 0
	for used < format.BucketEntries && buckets[full][used] != format.EmptySlot {
		used++
	}
	other := len(buckets) - 1
	for buckets[other][format.BucketEntries-1] != format.EmptySlot {
		other--
	}
	for _, tc := range []struct {
		name, want string
		damage     func(s [][format.BucketEntries]uint64)
	}{
		{"key after an empty slot", "after an empty slot", func(s [][format.BucketEntries]uint64) {
			s[full][0], s[full][used] = s[full][used], s[full][0]
		}},
		{"key in a bucket it does not choose", "does not find its own row", func(s [][format.BucketEntries]uint64) {
			o := other
			e := 0
			for s[o][e] != format.EmptySlot {
				e++
			}
			s[o][e] = s[full][used-1]
		}},
		{"key in two slots", "is in two slots", func(s [][format.BucketEntries]uint64) {
			s[full][used] = s[full][0]
		}},
		{"key gone", "bucket table says", func(s [][format.BucketEntries]uint64) {
			s[full][used-1] = format.EmptySlot
		}},
		{"key gone and another in two slots", "is in two slots", func(s [][format.BucketEntries]uint64) {
			s[full][used-1] = s[full][0]
		}},
		{"key in its second bucket while its first has room", "has room", func(s [][format.BucketEntries]uint64) {
			src, dst, e := secondBucketMove(t, s)
			d := 0
			for s[dst][d] != format.EmptySlot {
				d++
			}
			s[dst][d] = s[src][e]
			copy(s[src][e:], s[src][e+1:])
			s[src][format.BucketEntries-1] = format.EmptySlot
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, off, s := bucketedFixture(t)
			tc.damage(s)
			for i := range s {
				for j, v := range s[i] {
					binary.LittleEndian.PutUint64(b[off+uint64(i*format.BucketSize+8*j):], v)
				}
			}
			formattest.Reseal(t, b, format.SectionSlots)
			tbl, err := reader.OpenBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			err = tbl.Verify()
			if !errors.Is(err, reader.ErrVerify) || !errors.Is(err, format.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want a corruption that says %q", err, tc.want)
			}
		})
	}
}

// TestBucketTableDamage flips each byte of bucketed.lut's bucket table in
// turn, behind an intact checksum: Open must refuse the file or Verify
// must, and lookups between must not panic.
func TestBucketTableDamage(t *testing.T) {
	good, s := fixtureSection(t, format.SectionMPHF)
	keys := [][]byte{[]byte("0"), []byte("7"), []byte("1999"), []byte("2000"), []byte("x")}
	out := make([]reader.View, len(keys))
	var row reader.Row
	for i := s.Off; i < s.Off+s.Len; i++ {
		for _, flip := range []byte{0x01, 0x80} {
			b := bytes.Clone(good)
			b[i] ^= flip
			formattest.Reseal(t, b, format.SectionMPHF)
			tbl, err := reader.OpenBytes(b)
			if err != nil {
				if !errors.Is(err, format.ErrCorrupt) {
					t.Fatalf("byte %d ^ %#x: open error %v is not a corruption", i, flip, err)
				}
				continue
			}
			for _, k := range keys {
				tbl.Get(k, &row)
			}
			tbl.LookupBatch(keys, out)
			if err := tbl.Verify(); err == nil {
				t.Fatalf("byte %d ^ %#x: Verify passed on a damaged bucket table", i, flip)
			}
		}
	}
}

// secondBucketMove finds, in the buckets of bucketed.lut, a key in its
// first bucket whose second bucket has room: its bucket, slot, and second
// bucket.
func secondBucketMove(t *testing.T, s [][format.BucketEntries]uint64) (src, dst uint64, e int) {
	t.Helper()
	raw, err := os.ReadFile("testdata/bucketed.lut")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := reader.OpenBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	h := tbl.Header()
	var data, mphf format.Section
	for _, sec := range tbl.Sections() {
		switch sec.Kind {
		case format.SectionData:
			data = sec
		case format.SectionMPHF:
			mphf = sec
		}
	}
	bk, err := format.ParseBuckets(raw[mphf.Off:mphf.Off+mphf.Len], h.Rows, uint64(len(s))*format.BucketSize)
	if err != nil {
		t.Fatal(err)
	}
	for b := range s {
		for j, slot := range s[b] {
			if slot == format.EmptySlot {
				break
			}
			r, ok := format.ParseRecord(raw[data.Off:data.Off+data.Len], format.SlotRecord(slot), int(h.Columns))
			if !ok {
				t.Fatal("a malformed record")
			}
			b1, b2, _, _ := bk.Choices(format.HashKey(r.Key(), h.Seed))
			if b1 == uint64(b) && b2 != b1 && s[b2][format.BucketEntries-1] == format.EmptySlot {
				return b1, b2, j
			}
		}
	}
	t.Fatal("no key in its first bucket has room in its second")
	return 0, 0, 0
}

// TestBucketedFingerprintCollision gives the first slot of a bucket the
// fingerprint of the key in its second slot, pointing at another key's
// record: a lookup of that key meets a candidate that is not its record
// before its own slot, and Get and LookupBatch must both go on to it.
func TestBucketedFingerprintCollision(t *testing.T) {
	b, off, s := bucketedFixture(t)
	tbl, err := reader.OpenBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, sec := range tbl.Sections() {
		if sec.Kind == format.SectionData {
			data = b[sec.Off : sec.Off+sec.Len]
		}
	}
	full := -1
	for i := range s {
		if s[i][1] != format.EmptySlot {
			full = i
			break
		}
	}
	if full < 0 {
		t.Fatal("no bucket with two keys")
	}
	r, ok := format.ParseRecord(data, format.SlotRecord(s[full][1]), 2)
	if !ok {
		t.Fatal("the second slot does not point at a record")
	}
	key := string(r.Key())
	s[full][0] = s[full][0]&0xffffffff | s[full][1]&^0xffffffff
	binary.LittleEndian.PutUint64(b[off+uint64(full*format.BucketSize):], s[full][0])
	formattest.Reseal(t, b, format.SectionSlots)
	if tbl, err = reader.OpenBytes(b); err != nil {
		t.Fatal(err)
	}
	var row reader.Row
	if !tbl.Get([]byte(key), &row) || string(row.Col(1)) != "name"+key {
		t.Fatalf("Get(%s) = %q, want %q", key, row.Col(1), "name"+key)
	}
	keys := [][]byte{[]byte(key), []byte("absent")}
	out := make([]reader.View, len(keys))
	if n := tbl.LookupBatch(keys, out); n != 1 || string(out[0].Col(1)) != "name"+key {
		t.Fatalf("LookupBatch(%s) found %d keys, the first %q; want %q", key, n, out[0].Col(1), "name"+key)
	}
}

// fixtureSection returns the bytes of bucketed.lut and its section of kind.
func fixtureSection(t *testing.T, kind uint32) ([]byte, format.Section) {
	t.Helper()
	b, err := os.ReadFile("testdata/bucketed.lut")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := reader.OpenBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range tbl.Sections() {
		if sec.Kind == kind {
			return b, sec
		}
	}
	t.Fatalf("bucketed.lut has no section of kind %d", kind)
	return nil, format.Section{}
}
