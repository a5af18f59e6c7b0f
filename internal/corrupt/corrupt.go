// Package corrupt is the one marker for damaged files. Every error a
// reader returns about the content of a file (a .lut table, an MMDB file)
// satisfies errors.Is(err, ErrCorrupt), whichever reader found it and
// however it is worded; the readers export the same value as
// format.ErrCorrupt and mmdb.ErrCorrupt. Damage found at a known offset is
// an *Error (exported as format.CorruptError and mmdb.CorruptError).
package corrupt

import (
	"errors"
	"fmt"
)

// ErrCorrupt means a file is damaged or is not a valid file of its
// format: a checksum mismatch, a truncation, an offset out of range, a
// malformed record or search tree.
var ErrCorrupt = errors.New("corrupt file")

// Error is damage found at a byte offset.
type Error struct {
	// What names the damaged thing (".lut table", "MMDB section"); Off
	// counts from its start.
	What string
	Off  int64
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("corrupt %s: %s at offset %#x", e.What, e.Msg, e.Off)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *Error) Unwrap() error { return ErrCorrupt }

// At returns an *Error.
func At(what string, off int64, format string, args ...any) error {
	return &Error{What: what, Off: off, Msg: fmt.Sprintf(format, args...)}
}

// Mark returns err marked as corruption: its text is unchanged,
// errors.Is(err, ErrCorrupt) holds, and errors.Is and errors.As still see
// what err wraps. Mark(nil) is nil.
func Mark(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	return &marked{err}
}

// New returns an error with the given text that is marked as corruption.
func New(text string) error { return &marked{errors.New(text)} }

// Errorf is fmt.Errorf marked as corruption.
func Errorf(format string, args ...any) error { return &marked{fmt.Errorf(format, args...)} }

type marked struct{ err error }

func (m *marked) Error() string        { return m.err.Error() }
func (m *marked) Unwrap() error        { return m.err }
func (m *marked) Is(target error) bool { return target == ErrCorrupt }
