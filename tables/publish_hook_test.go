package tables

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestOnPublish: the function given to OnPublish is called once per
// version published after it is set, and sees that version; a check
// that publishes nothing does not call it, and nil stops the calls.
func TestOnPublish(t *testing.T) {
	dir := t.TempDir()
	compileVersion(t, filepath.Join(dir, "a.lut"), 10, 1)
	set, err := Open(dir, Options{NoWatch: true, DataVerify: DataVerifyNone})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	type seen struct {
		gen   uint64
		names []string
	}
	var calls []seen
	set.OnPublish(func() {
		sn := set.Acquire()
		defer sn.Release()
		calls = append(calls, seen{sn.Generation(), sn.Names()})
	})
	compileVersion(t, filepath.Join(dir, "b.lut"), 10, 2)
	must(t, set.Reload())
	must(t, set.Reload()) // nothing changed: nothing published
	if len(calls) != 1 || calls[0].gen != 2 || !slices.Equal(calls[0].names, []string{"a", "b"}) {
		t.Fatalf("calls %+v, want one of generation 2 with a and b", calls)
	}
	set.OnPublish(nil)
	compileVersion(t, filepath.Join(dir, "c.lut"), 10, 3)
	must(t, set.Reload())
	if len(calls) != 1 || set.Generation() != 3 {
		t.Fatalf("after OnPublish(nil): calls %+v, generation %d", calls, set.Generation())
	}
}
