package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/tables"
	"github.com/lutkit/lutkit/tables/tablebuild"
)

func init() {
	extraCommands = append(extraCommands, newBuildCommand)
	verifyDir = verifyBuiltDir
}

func newBuildCommand() *cobra.Command {
	var (
		out   string
		jobs  int
		force bool
		prune bool
		quiet bool
		dlt   bool
		chain int
		prog  string
	)
	cmd := &cobra.Command{
		Use:   "build TABLES.yaml --out DIR",
		Short: "Compile every table of a tables.yaml that changed, and write DIR/MANIFEST.json",
		Long: `Build reads a tables.yaml (the list of tables, their kind, sources and
compile options), compiles every table whose sources or options changed
since the manifest in DIR, and writes DIR/MANIFEST.json.

Artifacts are content-addressed (NAME-DIGEST.lut, NAME-DIGEST.mmdb), each
written to a temporary file, fully verified and renamed into place; the
manifest is renamed into place last, and only when every table succeeded.
An interrupted or failed build leaves the previous manifest. The exit
status is 1 if any table fails (every failure is listed), 2 if the
tables.yaml is invalid or DIR cannot be written.

An artifact name or MANIFEST.json in DIR that is a symbolic link (a
dangling one too) stays a link, as with cp: the file it names is replaced,
by a rename in that file's directory, and a reader that opened the old
file keeps reading it.

Deploy by copying DIR to the nodes, MANIFEST.json last; "lut verify DIR"
checks every artifact against the manifest. SOURCE_DATE_EPOCH, when set,
is the build time recorded in the tables and the manifest.

With --delta, a rebuilt .lut table is also written as NAME-DIGEST.lutdelta,
a patch from the previous version's artifact (format/DELTA.md), named in
the manifest beside the full artifact: nodes that hold the previous
version download the delta, rebuild the artifact and check its digest;
the others download the full artifact. After --delta-chain consecutive
versions with a delta, a version is published full only.

With --force, every table is compiled again, changed or not; a table that
comes out with the same bytes as its previous version (as does one whose
options changed nothing in it) keeps that version's entry in the manifest,
with its build time and delta, so that nodes download nothing again.`,
		Example: `  lut build tables.yaml --out dist/
  lut build tables.yaml --out dist/ -j 4 --prune
  lut build tables.yaml --out dist/ --delta
  lut verify dist/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: 2, msg: "build: --out is required"}
			}
			switch {
			case jobs < 0:
				return &exitError{code: 2, msg: fmt.Sprintf("build: --jobs must be 1 or more (0: one per CPU), not %d", jobs)}
			case chain < 0:
				return &exitError{code: 2, msg: fmt.Sprintf("build: --delta-chain must be 1 or more (0: the default, %d), not %d", tablebuild.DefaultDeltaChain, chain)}
			case jobs == 0:
				jobs = runtime.NumCPU()
			}
			cfg, err := tablebuild.LoadConfig(args[0])
			if err != nil {
				var ce tablebuild.ConfigErrors
				if errors.As(err, &ce) {
					for _, e := range ce {
						fmt.Fprintln(cmd.ErrOrStderr(), e)
					}
					return &exitError{code: 2, msg: fmt.Sprintf("build: %s: %d problem(s)", args[0], len(ce))}
				}
				return &exitError{code: 2, msg: "build: " + err.Error()}
			}
			buildTime, err := compile.BuildTimeFromEnv()
			if err != nil {
				return &exitError{code: 2, msg: "build: " + err.Error()}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w, ew := cmd.OutOrStdout(), cmd.ErrOrStderr()
			meter := newBuildMeter(ew, prog, cfg)
			defer meter.clear()
			res, err := tablebuild.Build(ctx, cfg, out, tablebuild.Options{
				Jobs: jobs, Force: force, BuildTime: buildTime, Prune: prune, Delta: dlt, DeltaChain: chain,
				Report: func(r tablebuild.TableResult) {
					meter.clear()
					defer meter.table(r)
					switch r.Status {
					case tablebuild.StatusFailed:
						fmt.Fprintf(ew, "FAILED    %s (%.2fs)\n", r.Name, r.Elapsed.Seconds())
					case tablebuild.StatusUnchanged:
						if !quiet {
							fmt.Fprintf(w, "unchanged %-20s %s\n", r.Name, r.Entry.File)
						}
					default:
						if !quiet {
							fmt.Fprintf(w, "built     %-20s %s (%d %s, %s, %.2fs)\n", r.Name, r.Entry.File, r.Entry.Rows, rowsUnit(r.Entry.Kind), humanBytes(r.Entry.Size), r.Elapsed.Seconds())
							if d := r.Entry.Delta; d != nil {
								fmt.Fprintf(w, "delta     %-20s %s (%s from %.16s, chain %d)\n", r.Name, d.File, humanBytes(d.Size), d.BaseSHA256, d.Chain)
							}
						}
					}
				},
			})
			if res == nil {
				return &exitError{code: 2, msg: "build: " + err.Error()}
			}
			if failed := res.Failed(); len(failed) > 0 {
				meter.clear()
				fmt.Fprintf(ew, "%d of %d tables failed; %s was not updated:\n", len(failed), len(res.Tables), filepath.Join(out, tables.ManifestName))
				for _, f := range failed {
					fmt.Fprintf(ew, "  %v\n", f.Err)
				}
				return &exitError{code: 1}
			}
			if err != nil {
				return &exitError{code: 2, msg: "build: " + err.Error()}
			}
			built := 0
			for _, r := range res.Tables {
				if r.Status == tablebuild.StatusBuilt {
					built++
				}
			}
			for _, p := range res.Pruned {
				if !quiet {
					fmt.Fprintf(w, "pruned    %s\n", p)
				}
			}
			if !quiet {
				meter.clear()
				fmt.Fprintf(w, "%s: %d tables (%d built, %d unchanged)\n", filepath.Join(out, tables.ManifestName), len(res.Tables), built, len(res.Tables)-built)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "out", "o", "", "output directory (created if needed)")
	f.IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "tables compiled in parallel (0: one per CPU)")
	f.BoolVar(&force, "force", false, "rebuild every table, changed or not")
	f.BoolVar(&prune, "prune", false, "remove artifacts named by neither the new nor the previous manifest")
	f.BoolVarP(&quiet, "quiet", "q", false, "print failures only")
	f.BoolVar(&dlt, "delta", false, "also write each rebuilt .lut table as a delta from its previous version")
	f.IntVar(&chain, "delta-chain", tablebuild.DefaultDeltaChain, "consecutive versions of a table with a delta before one is published full only (0: the default)")
	progressFlag(f, &prog, "progress on stderr: auto (when a terminal), always or never")
	return cmd
}

// verifyBuiltDir checks a directory built by "lut build".
func verifyBuiltDir(cmd *cobra.Command, dir string) error {
	results, err := tables.VerifyDir(dir)
	if results == nil && err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: FAILED: %v\n", r.File, r.Err)
			continue
		}
		checked := "digest and every checksum verified"
		if r.Kind == tables.KindMMDB {
			checked = "digest and the search tree and data verified"
		}
		fmt.Fprintf(w, "%s: ok (table %s, %s, %d %s, %s)\n", r.File, r.Name, r.Kind, r.Rows, rowsUnit(r.Kind), checked)
	}
	if err != nil {
		return &exitError{code: 1} // each failure is printed above
	}
	fmt.Fprintf(w, "%s: ok (%s and %d artifacts)\n", dir, tables.ManifestName, len(results))
	return nil
}

// rowsUnit names what a manifest's rows count for a kind of table: the
// rows of a .lut table, the search tree nodes of an .mmdb.
func rowsUnit(k tables.Kind) string {
	if k == tables.KindMMDB {
		return "nodes"
	}
	return "rows"
}
