package tables

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzContentRange: a store's Content-Range header never panics the
// parser, and a range it accepts starts at the offset asked for.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 100-199/200", "bytes 0-0/*", "bytes 5-", "bytes -1--1/-1", "", "bytes 100-199/x"} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, cr string, offset int64) {
		total, ok := contentRangeTotal(cr, offset)
		if ok && (total < -1 || total >= 0 && total <= offset) {
			t.Fatalf("%q: total %d", cr, total)
		}
	})
}

// FuzzParseManifest: a manifest fetched from a store is untrusted: any
// bytes give a manifest or an error, never a panic, and an accepted
// manifest names only plain files with their kind's extension (deltas:
// .lutdelta).
func FuzzParseManifest(f *testing.F) {
	m := Manifest{Version: ManifestVersion, Writer: "w", Tables: []ManifestTable{{Name: "a", Kind: KindLUT,
		File: "a-0123456789abcdef.lut", SHA256: strings.Repeat("ab", 32), Size: 10, Rows: 1}}}
	b, _ := json.Marshal(m)
	f.Add(b)
	m.Tables[0].Delta = &ManifestDelta{File: "a-fedcba9876543210.lutdelta", SHA256: strings.Repeat("cd", 32), Size: 5,
		BaseSHA256: strings.Repeat("ef", 32), BaseSize: 9, Chain: 1}
	b, _ = json.Marshal(m)
	f.Add(b)
	f.Add([]byte("<html>"))
	f.Add([]byte(`{"version":1,"tables":[{"name":"../x","kind":"lut","file":"../x.lut"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest("fuzz", b)
		if err != nil {
			return
		}
		for _, tb := range m.Tables {
			if tb.File != filepath.Base(tb.File) || strings.ContainsAny(tb.File, `/\`) || filepath.Ext(tb.File) != tb.Kind.Ext() {
				t.Fatalf("accepted file name %q", tb.File)
			}
			if d := tb.Delta; d != nil && (d.File != filepath.Base(d.File) || strings.ContainsAny(d.File, `/\`) || filepath.Ext(d.File) != DeltaExt || d.File == ManifestName) {
				t.Fatalf("accepted delta file name %q", d.File)
			}
		}
	})
}
