package tables

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// Kind is the kind of a table: a .lut key-value table or an .mmdb IP table.
type Kind string

// Kinds.
const (
	KindLUT  Kind = "lut"
	KindMMDB Kind = "mmdb"
)

// Ext returns the file extension of the kind (".lut" or ".mmdb").
func (k Kind) Ext() string { return "." + string(k) }

// ManifestName is the name of the manifest in a built directory.
const ManifestName = "MANIFEST.json"

// ManifestVersion is the version of the manifest format (written by
// package tablebuild).
const ManifestVersion = 1

// Manifest lists the artifacts of one build: the unit that a live Set
// switches to as a whole.
type Manifest struct {
	Version   int             `json:"version"`
	Writer    string          `json:"writer"`
	Generated time.Time       `json:"generated"`
	Tables    []ManifestTable `json:"tables"`
}

// ManifestTable describes one artifact.
type ManifestTable struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// File is the artifact's name in the manifest's directory:
	// NAME-DIGEST.lut or NAME-DIGEST.mmdb, DIGEST being the first 16 hex
	// digits of SHA256.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Rows is the row count of a .lut table, the search tree node count
	// of an .mmdb table.
	Rows int64 `json:"rows"`
	// FormatVersion is the file format's major.minor version.
	FormatVersion string    `json:"format_version"`
	BuildTime     time.Time `json:"build_time"`
	// OptionsDigest is the SHA256 of the table's declaration (kind,
	// options, source paths and source options) and of the writer
	// version: with the source digests, it decides whether a table must
	// be rebuilt.
	OptionsDigest string         `json:"options_digest"`
	Sources       []SourceDigest `json:"sources"`
	// Delta, when set, rebuilds this artifact from the artifact of the
	// table's previous version: a node holding that one downloads the
	// delta instead (format/DELTA.md). File stays the full artifact, for
	// every other node and as the fallback.
	Delta *ManifestDelta `json:"delta,omitempty"`
}

// ManifestDelta describes the .lutdelta of a table's artifact.
type ManifestDelta struct {
	// File is NAME-DIGEST.lutdelta, DIGEST being the first 16 hex digits
	// of the delta's SHA256 (see DeltaName).
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// BaseSHA256 and BaseSize identify the artifact the delta applies
	// to: the table's artifact in the previous version.
	BaseSHA256 string `json:"base_sha256"`
	BaseSize   int64  `json:"base_size"`
	// Chain counts the table's consecutive versions published with a
	// delta, this one included: the builder publishes a version without
	// one when the chain would exceed its limit.
	Chain int `json:"chain"`
}

// DeltaExt is the file extension of a delta.
const DeltaExt = ".lutdelta"

// DeltaName returns the content-addressed file name of a table's delta.
func DeltaName(name, sha256hex string) string { return name + "-" + sha256hex[:16] + DeltaExt }

// SourceDigest identifies one source file's content.
type SourceDigest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

var (
	hexDigestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// nameRE is what a table name may hold: it becomes part of file names.
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
)

// ValidName reports whether name may name a table: 1-128 letters,
// digits, '_', '.' or '-', starting with a letter or digit (it becomes
// part of file names).
func ValidName(name string) bool { return nameRE.MatchString(name) }

// ArtifactName returns the content-addressed file name of a table.
func ArtifactName(name string, kind Kind, sha256hex string) string {
	return name + "-" + sha256hex[:16] + kind.Ext()
}

// ParseManifest decodes and checks a manifest. path names it in errors.
func ParseManifest(path string, b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest %s: not a valid manifest: %w", path, manifestValueError(b, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("manifest %s: trailing data after the JSON object", path)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("manifest %s: unsupported version %d (want %d)", path, m.Version, ManifestVersion)
	}
	seen := map[string]bool{}
	for i, t := range m.Tables {
		if !nameRE.MatchString(t.Name) {
			return nil, fmt.Errorf("manifest %s: table #%d: invalid name %q", path, i+1, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("manifest %s: table %q is listed twice", path, t.Name)
		}
		seen[t.Name] = true
		if t.Kind != KindLUT && t.Kind != KindMMDB {
			return nil, fmt.Errorf("manifest %s: table %q: unknown kind %q", path, t.Name, t.Kind)
		}
		if t.File == "" || t.File != filepath.Base(t.File) || strings.ContainsAny(t.File, `/\`) || t.File == "." || t.File == ".." || t.File == ManifestName {
			return nil, fmt.Errorf("manifest %s: table %q: file %q must be a plain file name in the manifest's directory", path, t.Name, t.File)
		}
		if filepath.Ext(t.File) != t.Kind.Ext() {
			return nil, fmt.Errorf("manifest %s: table %q: file %q does not end in %s", path, t.Name, t.File, t.Kind.Ext())
		}
		if !hexDigestRE.MatchString(t.SHA256) {
			return nil, fmt.Errorf("manifest %s: table %q: sha256 %q is not 64 lowercase hex digits", path, t.Name, t.SHA256)
		}
		if d := t.Delta; d != nil {
			switch {
			case t.Kind != KindLUT:
				return nil, fmt.Errorf("manifest %s: table %q: a delta is for .lut tables only", path, t.Name)
			case d.File == "" || d.File != filepath.Base(d.File) || strings.ContainsAny(d.File, `/\`) || filepath.Ext(d.File) != DeltaExt:
				return nil, fmt.Errorf("manifest %s: table %q: delta file %q must be a plain file name ending in %s", path, t.Name, d.File, DeltaExt)
			case !hexDigestRE.MatchString(d.SHA256) || !hexDigestRE.MatchString(d.BaseSHA256):
				return nil, fmt.Errorf("manifest %s: table %q: delta digests must be 64 lowercase hex digits", path, t.Name)
			case d.Size <= 0 || d.BaseSize <= 0 || d.Chain < 1:
				return nil, fmt.Errorf("manifest %s: table %q: delta size %d, base size %d and chain %d must be positive", path, t.Name, d.Size, d.BaseSize, d.Chain)
			case d.BaseSHA256 == t.SHA256:
				return nil, fmt.Errorf("manifest %s: table %q: a delta from the artifact to itself", path, t.Name)
			}
		}
	}
	return &m, nil
}

// ReadManifest reads and checks the manifest at path.
func ReadManifest(path string) (*Manifest, error) {
	b, err := fsutil.ReadRegular(path)
	if err != nil {
		return nil, err
	}
	return ParseManifest(path, b)
}

// Table returns the entry of the named table, or nil.
func (m *Manifest) Table(name string) *ManifestTable {
	for i := range m.Tables {
		if m.Tables[i].Name == name {
			return &m.Tables[i]
		}
	}
	return nil
}
