package compile

import "github.com/lutkit/lutkit/format"

// matchFeature returns the incompatible feature bit of the table's match
// kind.
func (c *compiler) matchFeature() uint32 {
	switch c.kind {
	case format.MatchSuffix:
		return format.FeatureSuffix
	case format.MatchWildcard:
		return format.FeatureWildcard
	case format.MatchPattern:
		return format.FeaturePattern
	}
	return 0
}

// matchSections writes the sections of the table's match kind, after
// SLOTS, with section (see run).
func (c *compiler) matchSections(section func(kind uint32, body func() error) error, w *countingWriter) error {
	switch c.kind {
	case format.MatchSuffix:
		return c.suffixSection(section, w)
	case format.MatchWildcard, format.MatchPattern:
		return c.literalSection(section, w)
	}
	return nil
}
