package compile

import (
	"fmt"

	"github.com/lutkit/lutkit/format"
)

// suffixKey builds the key of a row of a suffix table: its one key
// column, normalised by format.NormalizeSuffix.
func (c *compiler) suffixKey(dst []byte, fields [][]byte) ([]byte, error) {
	v := fields[c.keyIdx[0]]
	k, err := format.NormalizeSuffix(dst, v)
	if err != nil {
		return nil, fmt.Errorf("key column %q: %q: %w", c.opts.Key[0], truncate(v), err)
	}
	return k, nil
}

// suffixSection writes the SUFFIX section: the label counts of the keys,
// and whether the table is bounded in time.
func (c *compiler) suffixSection(section func(kind uint32, body func() error) error, w *countingWriter) error {
	var flags uint32
	if c.match.kind == format.SectionTimeBound {
		flags = format.SuffixTimeBound
	}
	return section(format.SectionSuffix, func() error {
		_, err := w.Write(format.AppendSuffixSection(nil, c.labels, flags))
		return err
	})
}
