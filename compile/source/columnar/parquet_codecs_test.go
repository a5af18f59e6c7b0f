package columnar

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestParquetCodecClaims: a Snappy or Zstandard page whose data says it
// holds 2 GiB (a Snappy stream's length, a Zstandard frame's content
// size), in a file of a few hundred bytes, is a corrupt page, and reading
// it allocates less than memLimit of the file; arrow-go's codecs made a
// buffer of that size (of 40 GiB, a fatal error of the Go runtime). Pages
// of both codecs, V1 and V2, still read.
func TestParquetCodecClaims(t *testing.T) {
	const rows = 200
	dir := t.TempDir()
	for _, tc := range []struct {
		codec compress.Compression
		claim []byte // the start of the page's compressed data
	}{
		{compress.Codecs.Snappy, binary.AppendUvarint(nil, 2<<30)},
		// A frame of a 1 KiB window whose content size is 2 GiB.
		{compress.Codecs.Zstd, binary.LittleEndian.AppendUint64([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xc0, 0x00}, 2<<30)},
	} {
		for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
			name := fmt.Sprintf("%s_v%d", strings.ToLower(tc.codec.String()), v+1)
			data := writeParquetColumn(t, arrow.PrimitiveTypes.Int64, rows, deltaInts,
				parquet.WithDictionaryDefault(false), parquet.WithCompression(tc.codec), parquet.WithDataPageVersion(v))
			t.Run(name+"_reads", func(t *testing.T) {
				readParquetRows(t, filepath.Join(dir, name+".parquet"), data, rows, func(i int, fields [][]byte) {
					if string(fields[0]) != fmt.Sprint(i) {
						t.Fatalf("row %d: %q", i+1, fields)
					}
				})
			})
			t.Run(name+"_claim", func(t *testing.T) {
				// The page's data follows its header at offset 4 (PAR1);
				// a V2 page of a required column has no levels.
				h, n, err := decodePageHeader(data[4:])
				if err != nil || h.compressed < int64(len(tc.claim)) {
					t.Fatalf("page header %+v: %v", h, err)
				}
				bad := append([]byte(nil), data...)
				copy(bad[4+n:], tc.claim)
				path := filepath.Join(dir, name+"_claim.parquet")
				if err := os.WriteFile(path, bad, 0o644); err != nil {
					t.Fatal(err)
				}
				limit := memLimit(int64(len(bad)))
				alloc, err := readAllocating(path)
				t.Logf("%d bytes, %d allocated: %v", len(bad), alloc, err)
				if alloc > uint64(limit) {
					t.Errorf("%d bytes allocated, limit %d", alloc, limit)
				}
				if err == nil || !strings.HasPrefix(err.Error(), path+`: corrupt Parquet page in column "k"`) {
					t.Errorf("err = %v, want a corrupt page", err)
				}
			})
		}
	}
}
