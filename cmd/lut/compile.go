package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/internal/fsutil"
)

// compileFlags are the flags of "lut compile" for .lut output: they
// decode into the compiler's specs, which tables.yaml decodes into too.
type compileFlags struct {
	out      string
	spec     compile.Options
	src      source.Options
	progress string
}

// lutFlags and sourceFlags name the flag that sets each key of
// compile.Options and source.Options.
var (
	lutFlags = []string{"key", "--key", "columns", "--columns", "fold_case", "--fold-case", "on_duplicate", "--on-duplicate", "skip_bad_rows", "--skip-bad-rows", "column_types", "--column-type", "source_types", "--source-types",
		"match", "--match", "range_columns", "--range-columns", "valid_from", "--valid-from", "valid_to", "--valid-to", "overlap", "--overlap", "strict_patterns", "--strict-patterns"}
	sourceFlags = []string{"format", "--format", "delimiter", "--delimiter", "quote", "--quote", "header", "--header", "sqlite_table", "--sqlite-table", "sqlite_query", "--sqlite-query", "", "--sqlite-table, --sqlite-query",
		"nested", "--nested", "postgres", "--postgres", "mysql", "--mysql", "query", "--query", "password_file", "--password-file"}
)

func newCompileCommand() *cobra.Command {
	var (
		fl compileFlags
		mf = newMMDBFlags()
	)
	cmd := &cobra.Command{
		Use:   "compile --out FILE [flags] (SOURCE | --postgres URL --query SELECT | --mysql DSN --query SELECT)",
		Short: "Compile a CSV/TSV, JSON, NDJSON, YAML, SQLite, Parquet or Arrow source, or a PostgreSQL or MySQL query, into a .lut table (or IP sources into an .mmdb)",
		Long: `Compile reads a source and writes an immutable table.

For a .lut table (the default), SOURCE is one of:
  a CSV file (.csv, or .csv.gz; "-" reads standard input)
  a TSV file (.tsv, .tab; or --delimiter '\t'): a quote inside a field is
    text (say "hi"), as TSV has no quoting; a field that starts with a
    quote is read as a quoted CSV field, which may hold tabs and line
    breaks (lut export --format tsv writes such fields), unless --quote
    none makes every quote text and every line a row
  a JSON file (.json, .json.gz): a dictionary {"key": value, ...} (columns
    "key" and "value", or the fields of an object value) or an array of
    objects; NDJSON (.ndjson, .jsonl): one object per line; YAML (.yaml,
    .yml): a mapping or a sequence of mappings, as JSON. Nested objects
    become dotted columns ("geo.city"), or JSON text with --nested json
  a SQLite database (.db, .sqlite, .sqlite3) with --sqlite-table or --sqlite-query
    (a BLOB is its bytes when they are UTF-8 text; select a text form of
    binary data, such as hex(col), with --sqlite-query)
  a Parquet file (.parquet) or an Arrow IPC file (.arrow, .feather, .ipc)
    (a binary value is its bytes when they are UTF-8 text)
--format overrides the detection by extension.

Instead of SOURCE, --postgres URL or --mysql DSN with --query SELECT reads
a query's rows, streamed in one read-only REPEATABLE READ transaction,
every value as text (NULL as empty). A bytea or BLOB is its bytes when
they are UTF-8 text; select a text form of binary data, such as
encode(col, 'hex') or HEX(col), in --query. The password comes from
PGPASSWORD (or ~/.pgpass), MYSQL_PWD or --password-file, never from the
URL or DSN.

Rows are validated as they stream: a row with the wrong number of fields
or invalid UTF-8 fails the compile with its file, line and column (or is
counted and reported with --skip-bad-rows). An NDJSON line that is not
one object in UTF-8 is such a row; a syntax error or invalid UTF-8 in a
JSON or YAML document fails the compile at its line and column (a YAML
syntax error at its line) even with --skip-bad-rows, as the rows after it
cannot be told apart. A repeated
key fails with both line numbers unless --on-duplicate says which row
wins; in a JSON, NDJSON or YAML document it is placed at the second
row's key (line and byte column), and two rows on one line are named by
their keys' columns.

--match suffix makes a table of domain suffixes: its one key column holds
names (a leading "*." or "." is accepted, case does not matter), and a
lookup of a.b.evil.com finds the row of a.b.evil.com, else b.evil.com,
else evil.com, else com: the most specific suffix in the table.

--match wildcard makes a table of globs ("web-*", "*.corp.example.com",
"*-db-*": '*' is any run of characters): a lookup finds the matching glob
with the most literal characters, then the first in the source.
--match pattern makes a table of regular expressions (RE2 syntax), matched
anywhere in the key unless anchored: a lookup finds the first matching
pattern in the source. A pattern that does not compile, can never match
(a^b, $a, an empty class) or compiles to more than 10000 instructions
fails with its file:line:column; one with no literal that every match
contains (\d+, .*) is run on every lookup: it is a warning on stderr,
counted in the summary, and an error with --strict-patterns.

Exit status: 1 when the source's data is at fault at a place lut names
(file:line:column; the row and column for SQLite, Parquet, Arrow,
PostgreSQL and MySQL): a bad row, a JSON or YAML syntax error, invalid
UTF-8, a repeated key or column name. 2 on usage and I/O errors, and for
a source that cannot be read as its format at all or is damaged where no
row is at fault: a file that is not SQLite, Parquet or Arrow, a damaged
Parquet footer or page or Arrow batch, a gzip stream cut short.

The output is written atomically (a temporary file in the same directory,
then a rename) and is byte-for-byte reproducible: the build time is only
recorded when SOURCE_DATE_EPOCH is set. An --out that is a symbolic link
stays one: the file it names is replaced. An --out that is a device or a
named pipe (/dev/stdout) is written into: the table is assembled in a
scratch file under $TMPDIR, then copied. An --out that is one of the
inputs (SOURCE, an --ioc list, --password-file) is refused, except an
.mmdb read as a layer (--base, an .mmdb SOURCE): the new file replaces it.

An output name ending in .mmdb compiles IP data instead; see the IP flags
below and "lut compile --help" in docs/mmdb.md. A flag of the other kind
of output (an MMDB flag such as --record-size for a .lut table; --fold-case,
--match, --skip-bad-rows and the like for an .mmdb) is a usage error, and
so is --sqlite-table or --sqlite-query for a source that is not SQLite.`,
		Example: `  lut compile --key Index --out customers.lut customers.csv
  lut compile --key "Customer Id" --fold-case --columns "Customer Id,Email" --out emails.lut customers.csv.gz
  lut compile --key host,port --out services.lut services.tsv
  lut compile --match range --range-columns from,to --out ports.lut ports.csv
  lut compile --key ip --valid-from start --valid-to end --out leases.lut leases.csv
  lut compile --match range --range-columns from,to --valid-from start --valid-to end --overlap narrowest --out cgnat.lut cgnat.csv
  lut compile --key id --sqlite-table assets --out assets.lut inventory.db
  lut compile --key key --out translate.lut dictionary.json
  lut compile --key id --nested json --out assets.lut assets.ndjson
  lut compile --key domain --match suffix --out ioc.lut ioc-domains.csv
  lut compile --key host --match wildcard --out hostgroups.lut hostgroups.csv
  lut compile --key pattern --match pattern --out agents.lut user-agents.csv
  PGPASSWORD=... lut compile --key id --postgres postgres://lut@db/cmdb --query 'SELECT * FROM assets' --out assets.lut
  lut compile --key id --mysql 'lut@tcp(db:3306)/crm' --password-file pw --query 'SELECT id, name FROM customers' --out customers.lut
  zcat big.csv.gz | lut compile --key id --out big.lut -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if fl.out == "" {
				return &exitError{code: 2, msg: "compile: --out is required"}
			}
			mmdb := mf.mmdb || strings.EqualFold(filepath.Ext(fl.out), ".mmdb")
			if err := fsutil.CheckNotInput(fl.out, compileInputs(args, &fl, mf, mmdb)...); err != nil {
				return &exitError{code: 2, msg: "compile: " + err.Error()}
			}
			if mmdb {
				if err := notApplicable(cmd, "compile", lutOnlyFlags, ".lut output", fl.out+" is written as an MMDB file"); err != nil {
					return err
				}
			} else if err := notApplicable(cmd, "compile", mmdbOnlyFlags(), ".mmdb output", fl.out+" is a .lut table (name the output .mmdb, or give --mmdb)"); err != nil {
				return err
			}
			if db := fl.src.Database(); db != "" {
				if mmdb {
					return &exitError{code: 2, msg: "compile: a --" + db + " source compiles .lut tables only"}
				}
				if len(args) != 0 {
					return &exitError{code: 2, msg: "compile: a --" + db + " source takes no SOURCE argument"}
				}
				return runCompile(cmd, "", &fl)
			}
			if mmdb {
				// --base and --ioc are sources of their own.
				return runCompileMMDB(cmd, args, &fl, mf)
			}
			if len(args) == 0 {
				return &exitError{code: 2, msg: "compile: a SOURCE (or --postgres/--mysql with --query) is required"}
			}
			if len(args) != 1 {
				return &exitError{code: 2, msg: "compile: a .lut table takes exactly one SOURCE"}
			}
			return runCompile(cmd, args[0], &fl)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&fl.out, "out", "o", "", "output file (.lut, or .mmdb for IP data)")
	f.StringSliceVarP(&fl.spec.Key, "key", "k", nil, "key column; several (--key a,b) make a composite key")
	f.StringSliceVar(&fl.spec.Columns, "columns", nil, "columns to keep, in order (default: all)")
	f.StringSliceVar(&fl.src.Header, "header", nil, "column names, for a CSV without a header row")
	f.VarP(textVar(&fl.src.Delimiter), "delimiter", "d", `CSV field delimiter (default "," or "\t" for .tsv); "\t" means tab`)
	f.StringVar(&fl.src.Quote, "quote", "", `CSV/TSV quoting: csv (a field that starts with a quote is quoted, as RFC 4180; the default) or none (every quote is text and a row is a line: for TSV files holding "hi" as text)`)
	f.StringVar(&fl.src.Format, "format", "", "source format: csv, tsv, json, ndjson, yaml, sqlite, parquet or arrow (default: from the extension)")
	f.StringVar(&fl.src.Nested, "nested", "", "nested JSON/YAML values: flatten (dotted columns, the default) or json (JSON text)")
	f.StringVar(&fl.src.Postgres, "postgres", "", "PostgreSQL connection URL to run --query on (password from PGPASSWORD, ~/.pgpass or --password-file)")
	f.StringVar(&fl.src.MySQL, "mysql", "", "MySQL/MariaDB DSN (user@tcp(host:port)/db) to run --query on (password from MYSQL_PWD or --password-file)")
	f.StringVar(&fl.src.Query, "query", "", "SELECT to run on --postgres or --mysql")
	f.StringVar(&fl.src.PasswordFile, "password-file", "", "file whose first line is the database password")
	f.BoolVar(&fl.spec.FoldCase, "fold-case", false, "case-fold keys (lookups fold the same way)")
	f.StringVar(&fl.spec.OnDuplicate, "on-duplicate", compile.DuplicateError, "what a repeated key does: error, first (first row wins) or last")
	f.StringToStringVar(&fl.spec.ColumnTypes, "column-type", nil, "column types: price=number,active=bool,tags=json (default text); written unquoted in JSON")
	f.BoolVar(&fl.spec.SourceTypes, "source-types", false, "type columns as the source declares them (PostgreSQL, MySQL, Parquet, Arrow, the values of JSON/NDJSON): numbers, booleans and JSON written unquoted; --column-type overrides")
	f.StringVar(&fl.spec.Match, "match", "", "how lookups match rows: exact (the default), suffix (domain names: evil.com matches a.b.evil.com, the longest wins), range (an integer within --range-columns), wildcard (globs: web-*, the most literal characters win) or pattern (regular expressions, the first in the source wins)")
	f.StringSliceVar(&fl.spec.RangeColumns, "range-columns", nil, "a range table's inclusive bounds, integers or IPv4 addresses: from,to (they are its key)")
	f.StringVar(&fl.spec.ValidFrom, "valid-from", "", "column of the time each row becomes valid (RFC 3339 or epoch seconds; empty: always was)")
	f.StringVar(&fl.spec.ValidTo, "valid-to", "", "column of the time each row stops being valid, exclusive (empty: still is)")
	f.StringVar(&fl.spec.Overlap, "overlap", "", "overlapping ranges, or validities of one key: error (the default), narrowest or first (the order of several matches)")
	f.BoolVar(&fl.spec.StrictPatterns, "strict-patterns", false, "a pattern table: fail on a pattern with no literal every match contains (run on every lookup) instead of warning")
	f.BoolVar(&fl.spec.SkipBadRows, "skip-bad-rows", false, "skip malformed rows (counted and reported) instead of failing")
	f.StringVar(&fl.src.SQLiteTable, "sqlite-table", "", "table to read from a SQLite source")
	f.StringVar(&fl.src.SQLiteQuery, "sqlite-query", "", "SELECT to run on a SQLite source")
	progressFlag(f, &fl.progress, "progress on stderr: auto (when a terminal), always or never")
	mf.register(f)
	return cmd
}

// compileInputs lists the files lut compile reads: the sources, --base,
// the --ioc lists and --password-file. For an .mmdb output, the .mmdb
// files read as layers (--base, an .mmdb SOURCE) are left out: each is
// read whole before the new file is renamed over it, so one of them may
// be the output, updated in place.
func compileInputs(args []string, fl *compileFlags, mf *mmdbFlags, mmdb bool) []string {
	in := []string{fl.src.PasswordFile}
	if !mmdb {
		in = append(in, mf.base)
	}
	for _, a := range args {
		if !mmdb || !isMMDBFile(a) {
			in = append(in, a)
		}
	}
	for _, spec := range mf.iocs {
		if _, path, ok := strings.Cut(spec, "="); ok {
			spec = path // NAME=FILE, as sources reads it
		}
		in = append(in, spec)
	}
	return in
}

func runCompile(cmd *cobra.Command, path string, fl *compileFlags) error {
	if err := checkFlags("compile", func(v *config.Validator) {
		fl.spec.Check(v.In(flagsAt(lutFlags...), ""))
		fl.src.Check(v.In(flagsAt(sourceFlags...), ""))
		fl.src.CheckFormat(path, v.In(flagsAt(sourceFlags...), ""))
	}); err != nil {
		return err
	}
	buildTime, err := compile.BuildTimeFromEnv()
	if err != nil {
		return err
	}
	src, err := source.Open(path, fl.src)
	if err != nil {
		// Readers that read the source through once to find its columns
		// (JSON, NDJSON, YAML) report a bad document here.
		return dataError(err)
	}
	defer src.Close()
	if n, ok := src.(interface{ Name() string }); ok {
		path = n.Name() // a database, named without its password
	}
	start := time.Now()
	prog := newProgress(cmd.ErrOrStderr(), fl.progress, src)
	opts := fl.spec
	opts.BuildTime, opts.SourceName, opts.Progress = buildTime, path, prog.update
	stats, err := compile.File(src, fl.out, opts)
	prog.done()
	if err != nil {
		return dataError(fmt.Errorf("compile %s: %w", path, err))
	}
	w := cmd.ErrOrStderr()
	for _, e := range stats.BadRows {
		fmt.Fprintf(w, "skipped: %v\n", e)
	}
	if n := stats.SkippedRows - int64(len(stats.BadRows)); n > 0 {
		fmt.Fprintf(w, "skipped: %d more bad rows\n", n)
	}
	for _, e := range stats.Warnings {
		fmt.Fprintf(w, "warning: %v\n", e)
	}
	if n := stats.Unanchored - int64(len(stats.Warnings)); n > 0 {
		fmt.Fprintf(w, "warning: %d more patterns without a literal\n", n)
	}
	var extra []string
	if stats.Unanchored > 0 {
		what := "patterns"
		if stats.Unanchored == 1 {
			what = "pattern"
		}
		extra = append(extra, fmt.Sprintf("%d %s without a literal, run on every lookup (--strict-patterns refuses them)", stats.Unanchored, what))
	}
	if stats.SkippedRows > 0 {
		extra = append(extra, fmt.Sprintf("%d bad rows skipped", stats.SkippedRows))
	}
	if stats.Duplicates > 0 {
		extra = append(extra, fmt.Sprintf("%d duplicate rows dropped (%s wins)", stats.Duplicates, fl.spec.OnDuplicate))
	}
	note := ""
	if len(extra) > 0 {
		note = "; " + strings.Join(extra, ", ")
	}
	fmt.Fprintf(w, "compiled %s: %d rows, %s, in %.2fs%s\n", fl.out, stats.Rows, humanBytes(stats.Bytes), time.Since(start).Seconds(), note)
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// progress draws a one-line progress report on a terminal.
type progress struct {
	w     io.Writer
	on    bool
	start time.Time
	last  time.Time
	src   any
	drawn bool
}

// sizer is implemented by sources that know how far through their input
// they are.
type sizer interface {
	Progress() (done, total int64)
}

func newProgress(w io.Writer, mode string, src any) *progress {
	p := &progress{w: w, start: time.Now(), src: src}
	p.on = progressOn(w, mode)
	return p
}

func (p *progress) update(rows int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	count := fmt.Sprintf("%12d rows  %9.0f rows/s", rows, float64(rows)/max(now.Sub(p.start).Seconds(), 1e-9))
	frac := 0.0
	if s, ok := p.src.(sizer); ok {
		if done, total := s.Progress(); total > 0 {
			frac = float64(done) / float64(total)
		}
	}
	line := progressLine(count, frac, now.Sub(p.start))
	fmt.Fprint(p.w, line)
	p.drawn = true
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
