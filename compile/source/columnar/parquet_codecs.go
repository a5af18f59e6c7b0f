package columnar

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// arrow-go decompresses a Parquet page into a buffer of the size its
// header gives (which the reader limits to memLimit), and its gzip,
// Brotli and LZ4 codecs decode no further. Its Snappy and Zstandard codecs
// allocate what the compressed data says it holds instead: a Snappy
// stream's length (up to 4 GiB) or a Zstandard frame's content size (up
// to 64 GiB, a fatal error of the Go runtime past the machine's memory),
// a few bytes of a page of a few hundred. The codecs registered here in
// their place decode into the page's buffer, and a page whose data holds
// more is an error.
func init() {
	if c, err := compress.GetCodec(compress.Codecs.Snappy); err == nil {
		compress.RegisterCodec(compress.Codecs.Snappy, boundedSnappy{c})
	}
	if c, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
		compress.RegisterCodec(compress.Codecs.Zstd, boundedZstd{c})
	}
}

// boundedSnappy is arrow-go's Snappy codec, decoding into dst only.
type boundedSnappy struct{ compress.Codec }

func (c boundedSnappy) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err) // as arrow-go's codecs do: compress.Decode recovers it
	}
	return out
}

func (c boundedSnappy) DecodeWithError(dst, src []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if dst != nil && n > len(dst) {
		return nil, fmt.Errorf("snappy: the data decodes to %d bytes, more than the page's %d", n, len(dst))
	}
	return snappy.Decode(dst, src)
}

// boundedZstd is arrow-go's Zstandard codec, decoding into dst only.
type boundedZstd struct{ compress.Codec }

// zstdDecoder makes, on the first use, the decoder that decodes at most
// cap(dst) bytes into dst (its DecodeAll is safe for concurrent use).
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecodeAllCapLimit(true))
})

func (c boundedZstd) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err) // as arrow-go's codecs do: compress.Decode recovers it
	}
	return out
}

func (c boundedZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	if dst == nil {
		return compress.Decode(c.Codec, dst, src)
	}
	d, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	out, err := d.DecodeAll(src, dst[:0])
	if err != nil {
		return nil, fmt.Errorf("zstd: %w (the page holds %d bytes)", err, len(dst))
	}
	return out, nil
}
