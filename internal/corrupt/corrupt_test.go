package corrupt

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestMarker(t *testing.T) {
	at := At(".lut table", 0x40, "section %s checksum mismatch", "DATA")
	if at.Error() != "corrupt .lut table: section DATA checksum mismatch at offset 0x40" {
		t.Errorf("text %q", at)
	}
	var ce *Error
	if !errors.Is(at, ErrCorrupt) || !errors.As(fmt.Errorf("f: %w", at), &ce) || ce.Off != 0x40 {
		t.Errorf("At: Is %v, As %+v", errors.Is(at, ErrCorrupt), ce)
	}
	inner := fmt.Errorf("tree: %w", fs.ErrInvalid)
	m := Mark(inner)
	if m.Error() != inner.Error() || !errors.Is(m, ErrCorrupt) || !errors.Is(m, fs.ErrInvalid) {
		t.Errorf("Mark: %q Is(ErrCorrupt)=%v Is(inner)=%v", m, errors.Is(m, ErrCorrupt), errors.Is(m, fs.ErrInvalid))
	}
	var again *Error
	if Mark(nil) != nil || !errors.As(Mark(at), &again) || again != ce || Mark(at).Error() != at.Error() {
		t.Error("Mark of nil or of a marked error changed it")
	}
	if e := Errorf("bad %d", 3); e.Error() != "bad 3" || !errors.Is(e, ErrCorrupt) {
		t.Errorf("Errorf: %v", e)
	}
	if e := New("x"); e.Error() != "x" || !errors.Is(e, ErrCorrupt) {
		t.Errorf("New: %v", e)
	}
	if errors.Is(errors.New("x"), ErrCorrupt) {
		t.Error("an unmarked error is corruption")
	}
}
