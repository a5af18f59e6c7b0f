package tables

import (
	"strings"
	"testing"
)

// TestManifestValueErrors: a manifest value of the wrong type is named by
// its path, with the indexes of its arrays, and the problem said in words.
func TestManifestValueErrors(t *testing.T) {
	const sum = "08d66d2d1e1ed2e931442e2a9ebd8bafde53a44703c60bf34ee2f858850da1a4"
	table := func(size, sourceSize string) string {
		return `{"name": "small", "kind": "lut", "file": "small-08d66d2d1e1ed2e9.lut", "sha256": "` + sum + `", "size": ` + size +
			`, "rows": 50, "sources": [{"path": "a.csv", "sha256": "` + sum + `", "size": 1}, {"path": "b.csv", "sha256": "` + sum + `", "size": ` + sourceSize + `}]}`
	}
	for _, c := range []struct{ manifest, want string }{
		{`{"version": 1, "tables": [` + table("1e30", "1") + `]}`,
			"manifest M: not a valid manifest: tables[0].size: want a whole number that fits in 64 bits, not the number 1e30"},
		{`{"version": 1, "tables": [` + table("1", "1") + `, ` + table(`"12"`, "1") + `]}`,
			"manifest M: not a valid manifest: tables[1].size: want a whole number that fits in 64 bits, not a string"},
		{`{"version": 1, "tables": [` + table("1", "1.5") + `]}`,
			"manifest M: not a valid manifest: tables[0].sources[1].size: want a whole number that fits in 64 bits, not the number 1.5"},
		{`{"version": true, "tables": []}`,
			"manifest M: not a valid manifest: version: want a whole number that fits in 64 bits, not a boolean"},
	} {
		_, err := ParseManifest("M", []byte(c.manifest))
		if err == nil || err.Error() != c.want {
			t.Errorf("got  %v\nwant %s", err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "Go struct") {
			t.Errorf("names a Go struct: %v", err)
		}
	}
}
