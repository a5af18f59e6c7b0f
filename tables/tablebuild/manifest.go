package tablebuild

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/tables"
)

// writeManifest writes m to dir/MANIFEST.json atomically: temporary
// file, fsync, rename, fsync of the directory.
func writeManifest(dir string, m *tables.Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return fsutil.WriteFile(filepath.Join(dir, tables.ManifestName), func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}
