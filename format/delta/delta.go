package delta

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Magic is the first 8 bytes of a .lutdelta file.
const Magic = "\x89LUTDLT\n"

// Versions of the delta format.
const (
	MajorVersion = 1
	MinorVersion = 0
)

// HeaderSize is the size of the fixed header.
const HeaderSize = 128

// Ext is the file extension of a delta.
const Ext = ".lutdelta"

// Op codes of the operation stream.
const (
	opEnd     = 0
	opCopy    = 1
	opLiteral = 2
	opSlots   = 3
)

// Duplicate policies of a derived SLOTS range: which record of a key
// repeated in DATA its slot points at.
const (
	policyFirst = 0
	policyLast  = 1
)

// ErrNotDelta is returned for bytes that do not start with Magic.
var ErrNotDelta = errors.New("not a .lutdelta file (bad magic)")

// Header is the fixed header of a delta.
//
//	off size field
//	  0    8 magic
//	  8    2 major version (1)
//	 10    2 minor version (0)
//	 12    4 flags (0)
//	 16   32 SHA-256 of the base file
//	 48   32 SHA-256 of the target file
//	 80    8 base size
//	 88    8 target size
//	 96    8 body length (the bytes after the header)
//	104    8 XXH3-64 of the body
//	112    8 reserved, zero
//	120    8 XXH3-64 of header bytes 0..119
type Header struct {
	Major, Minor uint16
	Base, Target [32]byte
	BaseSize     uint64
	TargetSize   uint64
	BodyLen      uint64
	BodySum      uint64
}

// BaseSHA256 and TargetSHA256 return the digests in lowercase hex.
func (h *Header) BaseSHA256() string   { return hex.EncodeToString(h.Base[:]) }
func (h *Header) TargetSHA256() string { return hex.EncodeToString(h.Target[:]) }

func (h *Header) encode() []byte {
	b := make([]byte, HeaderSize)
	copy(b, Magic)
	le := binary.LittleEndian
	le.PutUint16(b[8:], MajorVersion)
	le.PutUint16(b[10:], MinorVersion)
	copy(b[16:48], h.Base[:])
	copy(b[48:80], h.Target[:])
	le.PutUint64(b[80:], h.BaseSize)
	le.PutUint64(b[88:], h.TargetSize)
	le.PutUint64(b[96:], h.BodyLen)
	le.PutUint64(b[104:], h.BodySum)
	le.PutUint64(b[120:], xxh3.Hash(b[:120]))
	return b
}

// ParseHeader decodes and checks the header of a delta whose total size
// is size: magic, major version, header checksum, flags, body length.
func ParseHeader(b []byte, size int64) (Header, error) {
	var h Header
	if len(b) < len(Magic) || string(b[:len(Magic)]) != Magic {
		return h, ErrNotDelta
	}
	if len(b) < HeaderSize {
		return h, fmt.Errorf("delta truncated: %d bytes is shorter than the %d-byte header", len(b), HeaderSize)
	}
	le := binary.LittleEndian
	h.Major, h.Minor = le.Uint16(b[8:]), le.Uint16(b[10:])
	if h.Major != MajorVersion {
		return h, fmt.Errorf("delta is version %d.%d, this reader supports %d.x", h.Major, h.Minor, MajorVersion)
	}
	if sum := xxh3.Hash(b[:120]); sum != le.Uint64(b[120:]) {
		return h, fmt.Errorf("delta header checksum mismatch (stored %#x, computed %#x)", le.Uint64(b[120:]), sum)
	}
	if f := le.Uint32(b[12:]); f != 0 {
		return h, fmt.Errorf("delta: unknown flags %#x", f)
	}
	copy(h.Base[:], b[16:48])
	copy(h.Target[:], b[48:80])
	h.BaseSize, h.TargetSize = le.Uint64(b[80:]), le.Uint64(b[88:])
	h.BodyLen, h.BodySum = le.Uint64(b[96:]), le.Uint64(b[104:])
	if size >= 0 && h.BodyLen != uint64(size)-HeaderSize {
		return h, fmt.Errorf("delta: the header says %d body bytes, the file holds %d", h.BodyLen, size-HeaderSize)
	}
	return h, nil
}
