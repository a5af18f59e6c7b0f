package delta

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
)

// FuzzApply applies untrusted deltas to a small table: any input is an
// error or a file of the header's size, never a panic, never more than
// the limit written.
func FuzzApply(f *testing.F) {
	base := customersTable(f, 300, "", nil)
	target := customersTable(f, 300, "", changeEvery(40))
	var d bytes.Buffer
	if _, err := Encode(&d, base, target); err != nil {
		f.Fatal(err)
	}
	f.Add(d.Bytes())
	d.Reset()
	if _, err := Encode(&d, base[:1000], []byte("some literal bytes and a copy")); err != nil {
		f.Fatal(err)
	}
	f.Add(d.Bytes())
	f.Add([]byte(Magic))
	// A body built by hand, so that mutations reach the operations.
	enc, _ := zstd.NewWriter(nil)
	body := enc.EncodeAll([]byte{opCopy, 0, 10, opLiteral, 2, 'a', 'b', opSlots, 8, 0, 4, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, opEnd}, nil)
	h := Header{BaseSize: 1000, TargetSize: 20, BodyLen: uint64(len(body)), BodySum: xxh3.Hash(body)}
	f.Add(append(h.encode(), body...))
	dir := f.TempDir()
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, d []byte) {
		// A fuzzed header has a wrong checksum; fix it up half the time
		// so that the body is reached.
		if len(d) >= HeaderSize && len(d)%2 == 0 {
			d = bytes.Clone(d)
			binary.LittleEndian.PutUint64(d[96:], uint64(len(d)-HeaderSize))
			binary.LittleEndian.PutUint64(d[104:], xxh3.Hash(d[HeaderSize:]))
			binary.LittleEndian.PutUint64(d[80:], uint64(len(base)))
			binary.LittleEndian.PutUint64(d[120:], xxh3.Hash(d[:120]))
		}
		out, err := os.Create(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		h, err := Apply(out, bytes.NewReader(base), int64(len(base)), d, limit)
		fi, serr := out.Stat()
		if serr != nil {
			t.Fatal(serr)
		}
		if fi.Size() > limit {
			t.Fatalf("wrote %d bytes, over the limit", fi.Size())
		}
		if err == nil && uint64(fi.Size()) != h.TargetSize {
			t.Fatalf("accepted, but wrote %d bytes for a target of %d", fi.Size(), h.TargetSize)
		}
	})
}
