package compile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// TestStoredColumnsHoldKeys: Options.Columns must hold the columns a
// lookup reads (key, range bounds, validity); a compile without one of
// them fails naming it.
func TestStoredColumnsHoldKeys(t *testing.T) {
	header := []string{"id", "from", "to", "start", "end", "v"}
	data := [][]string{{"1", "1", "5", "2026-01-01T00:00:00Z", "", "x"}}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Key: []string{"id"}, Columns: []string{"v"}}, `key column "id" must be among the stored columns`},
		{Options{Match: MatchRange, RangeColumns: []string{"from", "to"}, Columns: []string{"from", "v"}},
			`range column "to" must be among the stored columns`},
		{Options{Key: []string{"id"}, ValidFrom: "start", ValidTo: "end", Columns: []string{"id", "end", "v"}},
			`valid_from column "start" must be among the stored columns`},
	} {
		rows := &source.Rows{Header: header, Data: data}
		_, err := File(rows, filepath.Join(t.TempDir(), "t.lut"), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("columns %v: got %v, want an error containing %q", tc.opts.Columns, err, tc.want)
		}
	}
}
