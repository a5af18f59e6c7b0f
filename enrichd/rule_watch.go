package enrichd

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/lutkit/lutkit/tables"
)

// ruleWatch follows the versions of the table set the daemon's rules look
// up in. A swap (a new manifest, a file replaced) is not checked as the
// start and a reload are: it may drop a table a rule names, or change a
// table's key columns so that the rule's fields no longer make its key,
// and every lookup of that rule then misses. ruleWatch logs each such
// rule once, when a swap makes it miss (and again when a swap mends it),
// and gives /readyz a line per rule that misses now.
type ruleWatch struct {
	mu    sync.Mutex
	log   *slog.Logger
	rules []RuleConfig
	// missing is the reason each rule (by name) misses in the version
	// last seen.
	missing map[string]string
}

// watch makes rules those checked at every version set publishes from
// now on. The version loaded now was checked by checkRuleTables, which
// logged its missing tables.
func (w *ruleWatch) watch(set *tables.Set, rules []RuleConfig, log *slog.Logger) {
	sn := set.Acquire()
	w.mu.Lock()
	w.log, w.rules = log, rules
	w.missing = ruleMisses(rules, sn)
	w.mu.Unlock()
	sn.Release()
	set.OnPublish(func() { w.swapped(set) })
}

// swapped logs the rules a new version of set makes miss, or mends.
func (w *ruleWatch) swapped(set *tables.Set) {
	sn := set.Acquire()
	defer sn.Release()
	w.mu.Lock()
	defer w.mu.Unlock()
	now := ruleMisses(w.rules, sn)
	// The rules left without their table, by table.
	gone := map[string][]string{}
	for _, r := range w.rules {
		why, ok := now[r.Name]
		switch {
		case !ok && w.missing[r.Name] != "":
			w.log.Info("tables: the new version has the rule's table again, fitting the rule: its lookups find rows again", "rule", r.Name, "table", r.Table, "generation", sn.Generation())
		case !ok || why == w.missing[r.Name]:
		case !inSet(sn, r.Table):
			gone[r.Table] = append(gone[r.Table], r.Name)
		default:
			w.log.Warn("tables: the new version of a rule's table does not fit the rule: its lookups miss until a version that does is published or the rule is changed",
				"rule", r.Name, "table", r.Table, "reason", why, "generation", sn.Generation())
		}
	}
	for _, t := range slices.Sorted(maps.Keys(gone)) {
		w.log.Warn("tables: the new version has no table a rule looks up in: its lookups miss (events tagged _table_missing) until the table is published again or the rule is changed",
			"table", t, "rules", strings.Join(gone[t], ","), "generation", sn.Generation())
	}
	w.missing = now
}

// readyLines returns a line per rule that misses in the current version
// of set, for /readyz.
func (w *ruleWatch) readyLines(set *tables.Set) []string {
	sn := set.Acquire()
	defer sn.Release()
	w.mu.Lock()
	defer w.mu.Unlock()
	now := ruleMisses(w.rules, sn)
	var lines []string
	for _, r := range w.rules {
		if why, ok := now[r.Name]; ok {
			lines = append(lines, fmt.Sprintf("rule %s: %s: its lookups miss", r.Name, why))
		}
	}
	return lines
}

// ruleMisses returns, by rule name, why each rule of rules finds nothing
// in sn: its table is not there, is of the other kind, or has a key the
// rule's fields do not make. A damaged table is not one of them: it is
// logged and reported as such (tables.Set.Fault).
func ruleMisses(rules []RuleConfig, sn *tables.Snapshot) map[string]string {
	out := map[string]string{}
	for _, r := range rules {
		lut, mm := sn.LUT(r.Table), sn.MMDB(r.Table)
		switch {
		case !inSet(sn, r.Table):
			out[r.Name] = fmt.Sprintf("no table %q in the set", r.Table)
		case lut == nil && mm == nil:
		case r.MMDB && lut != nil:
			out[r.Name] = fmt.Sprintf("table %q is a .lut table, and the rule gives mmdb_fields", r.Table)
		case !r.MMDB && mm != nil:
			out[r.Name] = fmt.Sprintf("table %q is an .mmdb table, and the rule gives no mmdb_fields", r.Table)
		case lut != nil:
			if err := checkKeyFields(&r.Rule, lut); err != nil {
				out[r.Name] = err.Error()
			}
		}
	}
	return out
}

// inSet reports whether sn holds a table of that name, damaged or not.
func inSet(sn *tables.Snapshot, name string) bool {
	_, ok := sn.Table(name)
	return ok
}
