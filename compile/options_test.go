package compile

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/config"
)

func TestOptionsValidate(t *testing.T) {
	o := Options{Key: []string{"id", ""}, Columns: []string{"a", "b", "a"}, OnDuplicate: "sometimes"}
	err := o.Validate()
	var es config.Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("err = %v", err)
	}
	for i, want := range []string{
		"key: a key column name is empty",
		`columns: column "a" is listed twice`,
		`on_duplicate: unknown duplicate policy "sometimes" (want error, first or last)`,
	} {
		if es[i].Error() != want {
			t.Errorf("error %d: %q, want %q", i, es[i], want)
		}
	}
	if err := (&Options{}).Validate(); err == nil || err.Error() != "key: missing: a .lut table needs its key column(s)" {
		t.Errorf("no key: %v", err)
	}
	if err := (&Options{Key: []string{"k"}, OnDuplicate: DuplicateLast}).Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
	// Write refuses what Validate refuses.
	if _, err := Write(nil, nil, o); err == nil || !strings.Contains(err.Error(), "unknown duplicate policy") {
		t.Errorf("Write: %v", err)
	}
}

// TestOptionsSpec: the serialisable spec is the options a table declares;
// how one compile runs is not part of it, and defaults are applied in one
// place, not written into the spec.
func TestOptionsSpec(t *testing.T) {
	o := Options{Key: []string{"host", "port"}, FoldCase: true, OnDuplicate: DuplicateFirst,
		BuildTime: time.Unix(1, 0), Seed: 7, SourceName: "x.csv", Progress: func(int64) {}, MaxBadRowErrors: 3}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"key":["host","port"],"fold_case":true,"on_duplicate":"first"}` {
		t.Errorf("spec %s", b)
	}
	var back Options
	if err := json.Unmarshal(b, &back); err != nil || back.OnDuplicate != DuplicateFirst || len(back.Key) != 2 || !back.FoldCase {
		t.Errorf("round trip: %+v %v", back, err)
	}
	d := Options{Key: []string{"k"}}.withDefaults()
	if d.OnDuplicate != DuplicateError || d.Seed != DefaultSeed || d.MaxBadRowErrors != 20 {
		t.Errorf("defaults %+v", d)
	}
}
