package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newVerifyCommand() *cobra.Command {
	var (
		strict bool
		prog   string
	)
	cmd := &cobra.Command{
		Use:   "verify TABLE|DIR...",
		Short: "Check every checksum and that every key finds its own row",
		Long: `Verify reads a whole table: the header and section table, every section's
checksum, and every slot of the perfect hash (each key must hash back to
its own row). It prints "ok" per file, or what is wrong and where; the exit
status is 1 if any file fails.

Given a directory built by "lut build", it checks the manifest (it must
list at least one table) and every artifact it names.

Given an MMDB file, it fails only if the file is not a valid MaxMind DB
(the full verification of maxminddb-golang). What particular readers refuse
in a valid file is printed as a warning naming the reader: metadata types
libmaxminddb rejects, where Elasticsearch's scan looks for database_type,
database types that Logstash, Elasticsearch or a GeoIP2 API refuses for the
file's model (City, ASN), private networks Perl's GeoIP2 reader will not
look up, and record types the Java reader cannot decode. --strict makes
those failures.`,
		Example: `  lut verify customers.lut
  lut verify assets.mmdb
  lut verify --strict owners.mmdb   # fail on any reader that refuses the file
  lut verify dist/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			failed := 0
			for _, p := range args {
				var err error
				if fi, statErr := os.Stat(p); statErr == nil && fi.IsDir() {
					err = verifyDir(cmd, p)
				} else if isMMDBFile(p) {
					err = runVerifyMMDB(cmd, p, strict)
				} else {
					err = verifyLUT(cmd, p, prog)
				}
				if err != nil {
					var ee *exitError
					if errors.As(err, &ee) && ee.msg == "" {
						failed++
						continue
					}
					// The line names the file once, whether or not the
					// error does.
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: FAILED: %s\n", p, strings.TrimPrefix(err.Error(), p+": "))
					failed++
				}
			}
			if failed > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "MMDB: fail on compatibility findings, not just on an invalid file")
	progressFlag(cmd.Flags(), &prog, "progress of a .lut table's rows on stderr: auto (when a terminal), always or never")
	return cmd
}

func verifyLUT(cmd *cobra.Command, path, progressMode string) error {
	t, err := openLUT(path)
	if err != nil {
		return err
	}
	defer t.Close()
	vp := &verifyProgress{}
	prog := newProgress(cmd.ErrOrStderr(), progressMode, vp)
	err = t.VerifyProgress(func(done, total uint64) {
		vp.done, vp.total = int64(done), int64(total)
		if done == total {
			prog.last = time.Time{} // the end is drawn, however soon it comes
		}
		prog.update(vp.done)
	})
	prog.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d rows, %d sections, every checksum and key verified)\n", path, t.Rows(), len(t.Sections()))
	return nil
}

// verifyDir is replaced by the table-set check when that is linked in.
var verifyDir = func(cmd *cobra.Command, dir string) error {
	return fmt.Errorf("%s is a directory", dir)
}

// verifyProgress is how far a table's verification is, in rows, for the
// progress line's percentage and ETA.
type verifyProgress struct{ done, total int64 }

func (v *verifyProgress) Progress() (done, total int64) { return v.done, v.total }
