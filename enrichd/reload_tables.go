package enrichd

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/tables"
)

// openTables opens the table set of tc, watched as the configuration
// says.
func openTables(tc *TablesConfig, logger *slog.Logger) (*tables.Set, error) {
	opts := tables.Options{PollInterval: tc.PollInterval, NoNotify: tc.NoNotify, Logger: logger, DataVerify: dataVerify(tc.Verify),
		Remote: tc.RemoteOptions()}
	return tables.Open(tc.Path, opts)
}

// setCarry are the counters of the table sets a reload retired, added to
// the live set's so that enrichd_table_swaps_total and
// enrichd_table_swap_rejections_total keep counting across a switch.
type setCarry struct {
	swaps, rejections atomic.Uint64
}

// reloadTables opens the table set of tc when it differs from the live
// one's configuration, for a reload to switch to (switchTables). It
// returns nil when the tables section did not change. A set that does not
// open refuses the reload: the live set goes on.
func (d *Daemon) reloadTables(tc *TablesConfig) (*tables.Set, error) {
	if sameValue(d.tablesCfg, *tc) {
		return nil, nil
	}
	if (d.tablesCfg.Path == "") != (tc.Path == "") {
		return nil, errors.New("tables.path set or unset: the lookup API and the memcached listener are made with the daemon's tables, so adding or removing them needs a restart")
	}
	set, err := openTables(tc, d.log)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	return set, nil
}

// switchTables makes set (of configuration tc) and eng, the engine
// compiled against it, live together, between two batches: it waits for
// the batches being processed (batchMu), so that each is enriched wholly
// from the old set by the old engine or wholly from the new by the new.
// The lookup API and the memcached server answer from set from then on.
// The old set is closed: no batch uses it any more, and the requests
// still under way keep the tables of their snapshots mapped until they
// release them.
func (d *Daemon) switchTables(eng *engine.Engine, set *tables.Set, tc TablesConfig) {
	d.batchMu.Lock()
	old := d.set.Swap(set)
	d.engines.swap(eng)
	d.batchMu.Unlock()
	if d.api != nil {
		d.api.SetTables(set)
	}
	if d.mc != nil {
		d.mc.SetTables(set)
	}
	d.tablesCfg = tc
	if old != nil {
		st := old.Stats()
		d.setCarry.swaps.Add(st.Swaps)
		d.setCarry.rejections.Add(st.Rejections)
		if err := old.Close(); err != nil {
			d.log.Warn("closing the table set a reload replaced", "err", err)
		}
	}
}
