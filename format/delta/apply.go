package delta

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
)

// Apply rebuilds the target of the delta d from base (baseSize bytes)
// into out, an empty file opened for reading and writing, and returns the
// delta's header. It refuses a delta whose target is larger than
// maxTarget. Apply checks the delta's structure and bounds, not the
// result: the caller compares the SHA-256 of out with the digest it
// expects (the header's Target, or better its own manifest's).
func Apply(out *os.File, base io.ReaderAt, baseSize int64, d []byte, maxTarget int64) (Header, error) {
	h, err := ParseHeader(d, int64(len(d)))
	if err != nil {
		return h, err
	}
	if h.BaseSize != uint64(baseSize) {
		return h, fmt.Errorf("delta: the base is %d bytes, the delta was made from one of %d", baseSize, h.BaseSize)
	}
	if h.TargetSize > uint64(maxTarget) {
		return h, fmt.Errorf("delta: a target of %d bytes is over the limit of %d", h.TargetSize, maxTarget)
	}
	body := d[HeaderSize:]
	if sum := xxh3.Hash(body); sum != h.BodySum {
		return h, fmt.Errorf("delta body checksum mismatch (stored %#x, computed %#x)", h.BodySum, sum)
	}
	zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(64<<20), zstd.WithDecoderMaxWindow(32<<20))
	if err != nil {
		return h, err
	}
	defer zr.Close()
	a := applier{in: bufio.NewReaderSize(zr, 1<<16), w: bufio.NewWriterSize(out, 1<<20), base: base, baseSize: uint64(baseSize), size: h.TargetSize}
	if err := a.run(); err != nil {
		return h, err
	}
	if err := a.w.Flush(); err != nil {
		return h, err
	}
	if a.slots != nil {
		if err := a.derive(out); err != nil {
			return h, err
		}
	}
	return h, nil
}

type applier struct {
	in       *bufio.Reader
	w        *bufio.Writer
	base     io.ReaderAt
	baseSize uint64
	size     uint64 // target size
	pos      uint64 // target bytes written
	slots    *slotsParams
	slotsOff uint64
	slotsLen uint64
}

var errTruncated = errors.New("delta: the operation stream ends early")

func (a *applier) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(a.in)
	if err != nil {
		return 0, fmt.Errorf("delta: at target offset %d: %w", a.pos, errTruncated)
	}
	return v, nil
}

// length reads an operation's length: at least 1, within the target.
func (a *applier) length(what string) (uint64, error) {
	n, err := a.uvarint()
	if err != nil {
		return 0, err
	}
	if n == 0 || n > a.size-a.pos {
		return 0, fmt.Errorf("delta: %s of %d bytes at target offset %d runs past the target's %d bytes", what, n, a.pos, a.size)
	}
	return n, nil
}

func (a *applier) run() error {
	for {
		code, err := a.in.ReadByte()
		if err != nil {
			return errTruncated
		}
		switch code {
		case opEnd:
			if a.pos != a.size {
				return fmt.Errorf("delta: the operations produce %d bytes, the header says %d", a.pos, a.size)
			}
			if _, err := a.in.ReadByte(); err != io.EOF {
				return errors.New("delta: data after the end of the operation stream")
			}
			return nil
		case opCopy:
			off, err := a.uvarint()
			if err != nil {
				return err
			}
			n, err := a.length("COPY")
			if err != nil {
				return err
			}
			if off > a.baseSize || n > a.baseSize-off {
				return fmt.Errorf("delta: COPY of %d bytes from base offset %d runs past the base's %d bytes", n, off, a.baseSize)
			}
			if _, err := io.Copy(a.w, io.NewSectionReader(a.base, int64(off), int64(n))); err != nil {
				return fmt.Errorf("delta: copying from the base: %w", err)
			}
			a.pos += n
		case opLiteral:
			n, err := a.length("LITERAL")
			if err != nil {
				return err
			}
			if m, err := io.CopyN(a.w, a.in, int64(n)); err != nil {
				// The stream ending is a short delta; any other error
				// is the output's (a full disk) or the stream's own.
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					return fmt.Errorf("delta: at target offset %d: %w", a.pos+uint64(m), errTruncated)
				}
				return fmt.Errorf("delta: at target offset %d: %w", a.pos+uint64(m), err)
			}
			a.pos += n
		case opSlots:
			if err := a.readSlots(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("delta: unknown operation %d at target offset %d", code, a.pos)
		}
	}
}

// readSlots reads a SLOTS operation and reserves its range (zeros, filled
// by derive once the whole target is written).
func (a *applier) readSlots() error {
	if a.slots != nil {
		return fmt.Errorf("delta: a second SLOTS operation at target offset %d", a.pos)
	}
	n, err := a.length("SLOTS")
	if err != nil {
		return err
	}
	var p slotsParams
	for _, v := range []*uint64{&p.dataOff, &p.dataLen, &p.mphfOff, &p.mphfLen} {
		if *v, err = a.uvarint(); err != nil {
			return err
		}
	}
	var seed [8]byte
	if _, err := io.ReadFull(a.in, seed[:]); err != nil {
		return errTruncated
	}
	p.seed = binary.LittleEndian.Uint64(seed[:])
	if p.columns, err = a.uvarint(); err != nil {
		return err
	}
	if p.policy, err = a.in.ReadByte(); err != nil {
		return errTruncated
	}
	// DATA and MPHF are read back from the target: they must precede the
	// SLOTS range.
	if n%8 != 0 || p.dataOff > a.pos || p.dataLen > a.pos-p.dataOff || p.mphfOff > a.pos || p.mphfLen > a.pos-p.mphfOff {
		return fmt.Errorf("delta: SLOTS at target offset %d: %d bytes, DATA %d+%d, MPHF %d+%d: not a range derivable from what precedes it",
			a.pos, n, p.dataOff, p.dataLen, p.mphfOff, p.mphfLen)
	}
	a.slots, a.slotsOff, a.slotsLen = &p, a.pos, n
	var zero [4096]byte
	for left := n; left > 0; {
		k := min(left, uint64(len(zero)))
		if _, err := a.w.Write(zero[:k]); err != nil {
			return err
		}
		left -= k
	}
	a.pos += n
	return nil
}

// derive fills the SLOTS range of out from its DATA and MPHF.
func (a *applier) derive(out *os.File) error {
	p := a.slots
	mphf := make([]byte, p.mphfLen)
	if _, err := out.ReadAt(mphf, int64(p.mphfOff)); err != nil {
		return fmt.Errorf("delta: reading the target's MPHF: %w", err)
	}
	slots, err := deriveSlots(io.NewSectionReader(out, int64(p.dataOff), int64(p.dataLen)), mphf, a.slotsLen/8, *p)
	if err != nil {
		return fmt.Errorf("delta: %w", err)
	}
	if _, err := out.WriteAt(slots, int64(a.slotsOff)); err != nil {
		return fmt.Errorf("delta: writing the derived SLOTS: %w", err)
	}
	return nil
}
