package format

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// finderTable lays out the DATA, MPHF and SLOTS sections of a table of
// keys (with cols columns, some rows wide) the way the compiler does.
func finderTable(t testing.TB, keys []string, cols int, seed uint64) (data, slots []byte, f *MPHF, vals map[string][][]byte) {
	vals = make(map[string][][]byte)
	offs := make(map[uint64]uint64) // hash -> record offset
	hashes := make([]uint64, 0, len(keys))
	for i, k := range keys {
		v := make([][]byte, cols)
		for c := range v {
			v[c] = []byte(fmt.Sprintf("%s/%d", k, c))
		}
		if i%7 == 3 && cols > 0 {
			v[cols-1] = bytes.Repeat([]byte{'w'}, 0x10000) // a wide record
		}
		vals[k] = v
		h := HashKey([]byte(k), seed)
		offs[h] = uint64(len(data))
		hashes = append(hashes, h)
		data = AppendRecord(data, []byte(k), v)
	}
	f, err := BuildMPHF(hashes)
	if err != nil {
		t.Fatal(err)
	}
	f, err = ParseMPHF(f.AppendTo(nil), uint64(len(keys)))
	if err != nil {
		t.Fatal(err)
	}
	slots = make([]byte, 8*len(keys))
	for h, off := range offs {
		pos := f.Index(h)
		s := Slot(off, Fingerprint(h))
		for b := 0; b < 8; b++ {
			slots[8*pos+uint64(b)] = byte(s >> (8 * b))
		}
	}
	return data, slots, f, vals
}

// finderKeys returns n keys of lengths 0 to 40, so that every path of
// KeyHasher, equalKey and Find is taken.
func finderKeys(n int, prefix string) []string {
	keys := make([]string, 0, n)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if l := i % 41; l > len(k) {
			k += strings.Repeat("x", l-len(k))
		}
		keys = append(keys, k)
	}
	return append(keys, "")
}

// TestFinder looks every key of tables of 0 to 3 columns up with Find and
// with Match, and keys that are absent.
func TestFinder(t *testing.T) {
	for cols := 0; cols <= 3; cols++ {
		keys := finderKeys(500, "k")
		data, slots, mphf, vals := finderTable(t, keys, cols, 12345)
		fd, err := NewFinder(12345, mphf, slots, data, cols)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			r, ok := fd.Find([]byte(k))
			if !ok {
				t.Fatalf("%d columns: key %q not found", cols, k)
			}
			if string(r.Key()) != k || r.Columns() != cols {
				t.Fatalf("%d columns: key %q found %q of %d columns", cols, k, r.Key(), r.Columns())
			}
			if want, _ := ParseRecord(data, uint64(cap(data)-cap(r.Bytes())), cols); !bytes.Equal(want.Bytes(), r.Bytes()) {
				t.Fatalf("%d columns: key %q: Find's record is not ParseRecord's", cols, k)
			}
			for c := 0; c < cols; c++ {
				if !bytes.Equal(r.Value(c), vals[k][c]) {
					t.Fatalf("%d columns: key %q, value %d is %q, want %q", cols, k, c, r.Value(c), vals[k][c])
				}
			}
			h := fd.Hash([]byte(k))
			m, ok := fd.Match(fd.Slot(mphf.Index(h)), h, []byte(k))
			if !ok || &m.Bytes()[0] != &r.Bytes()[0] || len(m.Bytes()) != len(r.Bytes()) {
				t.Fatalf("%d columns: key %q: Match disagrees with Find", cols, k)
			}
		}
		for _, k := range finderKeys(500, "absent") {
			if k == "" {
				continue
			}
			if r, ok := fd.Find([]byte(k)); ok {
				t.Fatalf("%d columns: absent key %q found as %q", cols, k, r.Key())
			}
		}
	}
}

// FuzzFinder damages the DATA and SLOTS sections of a small table and
// looks every key up: nothing panics, and a record found has the key
// looked up and lies within DATA.
func FuzzFinder(f *testing.F) {
	keys := finderKeys(60, "k")
	data, slots, mphf, _ := finderTable(f, keys, 3, 99)
	f.Add(uint16(0), byte(0), uint16(0), byte(0), uint8(3))
	f.Add(uint16(2), byte(0xff), uint16(3), byte(0x80), uint8(3))
	f.Add(uint16(1), byte(0x40), uint16(4), byte(0x7f), uint8(0))
	f.Fuzz(func(t *testing.T, dpos uint16, dxor byte, spos uint16, sxor byte, cols uint8) {
		d, s := bytes.Clone(data), bytes.Clone(slots)
		d[int(dpos)%len(d)] ^= dxor
		s[int(spos)%len(s)] ^= sxor
		fd, err := NewFinder(99, mphf, s, d, int(cols%5))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			r, ok := fd.Find([]byte(k))
			if !ok {
				continue
			}
			if string(r.Key()) != k {
				t.Fatalf("key %q found as %q", k, r.Key())
			}
			for c := 0; c <= r.Columns(); c++ {
				r.Value(c)
			}
		}
	})
}
