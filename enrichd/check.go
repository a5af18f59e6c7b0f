package enrichd

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/reader/mmdb"
	"github.com/lutkit/lutkit/tables"
)

// CheckTables checks the configuration against the tables at
// cfg.Tables.Path as they are now, as the daemon would load them: every
// rule's table must be there and of the rule's kind (.lut for columns,
// .mmdb for mmdb_fields), a .lut rule's fields must make its table's key
// (checkKeyFields), every column a rule names must be a column of its
// table, and the memcached listener's default table and value column
// must exist. Each problem is a ConfigError placed where the configuration
// names the table or column.
//
// It reports whether the tables were there to check: a path that does not
// exist (yet) is not an error, only nothing to check against; one that
// exists but cannot be loaded is.
func CheckTables(cfg *Config) (checked bool, err error) {
	if cfg.Tables.Path == "" || tables.IsRemote(cfg.Tables.Path) {
		// A remote set is checked when the daemon starts: checking the
		// configuration downloads nothing.
		return false, nil
	}
	if _, err := os.Stat(cfg.Tables.Path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	v := &config.Validator{File: cfg.File}
	ts := v.In(&cfg.Tables.At, "tables")
	set, err := tables.Open(cfg.Tables.Path, tables.Options{NoWatch: true, DataVerify: dataVerify(cfg.Tables.Verify), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		ts.Errorf("path", "%v", err)
		return true, v.Err()
	}
	defer set.Close()
	sn := set.Acquire()
	defer sn.Release()
	st := set.Stats()
	rejected := map[string]string{}
	for _, r := range st.Rejected {
		rejected[r.Name] = r.LastReason
	}
	missing := func(name string) string {
		if why, ok := rejected[name]; ok {
			return fmt.Sprintf("table %q in %s is rejected: %s", name, cfg.Tables.Path, why)
		}
		return fmt.Sprintf("no table %q in %s (it holds: %s)", name, cfg.Tables.Path, listOrNone(sn.Names()))
	}
	s := v.In(&cfg.At, "")
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		rs := s.In(&r.At, config.Index("rules", i))
		lut, mm := sn.LUT(r.Table), sn.MMDB(r.Table)
		switch {
		case lut == nil && mm == nil:
			rs.Errorf("table", "%s", missing(r.Table))
		case r.MMDB && lut != nil:
			rs.Errorf("mmdb_fields", "table %q is a .lut table: name its columns (columns), not mmdb_fields", r.Table)
		case !r.MMDB && mm != nil:
			rs.Errorf("table", "table %q is an .mmdb table: give mmdb_fields", r.Table)
		case mm != nil:
			checkMMDBFields(rs, r, mm)
		case lut != nil:
			if err := checkKeyFields(&r.Rule, lut); err != nil {
				rs.Errorf("field", "%v", err)
			}
			for j, c := range r.Columns {
				if lut.ColumnIndex(c.From) < 0 {
					rs.Errorf(config.Index("columns", j), "table %q has no column %q (its columns: %s)", r.Table, c.From, strings.Join(lut.Columns(), ", "))
				}
			}
		}
	}
	if mc := &cfg.Memcached; mc.Listen != "" && mc.DefaultTable != "" {
		ms := s.In(&mc.At, "memcached")
		switch lut := sn.LUT(mc.DefaultTable); {
		case lut == nil && sn.MMDB(mc.DefaultTable) == nil:
			ms.Errorf("default_table", "%s", missing(mc.DefaultTable))
		case lut != nil && mc.ValueColumn != "" && lut.ColumnIndex(mc.ValueColumn) < 0:
			ms.Errorf("value_column", "table %q has no column %q (its columns: %s)", mc.DefaultTable, mc.ValueColumn, strings.Join(lut.Columns(), ", "))
		}
	}
	return true, v.Err()
}

// scanMMDBPaths is missingMMDBPaths under a guard: the check reads the
// mapped file (a reload's check runs in the daemon), and a file
// rewritten in place under it is an error of the check, not a SIGBUS.
func scanMMDBPaths(mm *mmdb.Reader, want []string) (missing, have []string, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtime.Error)
			if !ok || !strings.Contains(re.Error(), "fault") {
				panic(r)
			}
			missing, have, err = nil, nil, fmt.Errorf("the file changed while it was read (rewritten in place?): %w", re)
		}
	}()
	return missingMMDBPaths(mm, want)
}

// checkMMDBFields reports the mmdb_fields paths of r that no record of
// its table holds (they would write nothing), naming close paths.
func checkMMDBFields(rs config.Scope, r *RuleConfig, mm *mmdb.Reader) {
	want := make([]string, len(r.MMDBFields))
	for j, f := range r.MMDBFields {
		want[j] = f.From
	}
	missing, have, err := scanMMDBPaths(mm, want)
	if err != nil {
		rs.Errorf("mmdb_fields", "table %q: reading its records: %v", r.Table, err)
		return
	}
	for _, p := range missing {
		j := slices.Index(want, p)
		msg := fmt.Sprintf("no record of table %q has the path %q", r.Table, p)
		if c := closeNames(p, have); len(c) > 0 {
			msg += fmt.Sprintf(" (close: %s)", strings.Join(c, ", "))
		} else if len(have) > 0 {
			top := []string{}
			for _, h := range have {
				if !strings.Contains(h, ".") {
					top = append(top, h)
				}
			}
			msg += fmt.Sprintf(" (its records have: %s)", strings.Join(top, ", "))
		}
		rs.Errorf(config.Index("mmdb_fields", j), "%s", msg)
	}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no tables"
	}
	return strings.Join(names, ", ")
}

// dataVerify is the tables package's level for a Verify setting.
func dataVerify(v Verify) tables.DataVerify {
	switch v {
	case VerifyDigest:
		return tables.DataVerifyDigest
	case VerifyNone:
		return tables.DataVerifyNone
	}
	return tables.DataVerifyFull
}
