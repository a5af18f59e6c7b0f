package iptable

import (
	"fmt"
	"io"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// notLUT refuses a .lut table given as a source, which the readers would
// take for a CSV file or a list of binary text (a bad row at line 1) or
// for an MMDB without its metadata. A file that cannot be opened, or is
// not a regular file, is left to the source's reader to report.
func notLUT(src *Source) error {
	f, _, err := fsutil.OpenRegular(src.Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var b [len(format.Magic)]byte
	if _, err := io.ReadFull(f, b[:]); err != nil || string(b[:]) != format.Magic {
		return nil
	}
	what := "a CSV file of networks or ranges"
	switch src.Kind {
	case List:
		what = "an address list"
	case Base:
		what = "a MaxMind DB (.mmdb)"
	}
	return fmt.Errorf("%s is a .lut table, not %s: an .mmdb is compiled from CSV files, address lists and .mmdb files "+
		"(lut export %s writes the table's rows as CSV)", src.Path, what, src.Path)
}
