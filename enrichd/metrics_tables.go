package enrichd

import (
	"runtime/debug"
	"sync"

	"github.com/lutkit/lutkit/tables"
)

var mTblNodes = MetricDesc("table_mmdb_nodes", "Search tree nodes of an .mmdb table (its enrichd_table_rows are its networks).", "table")

// networkCounts counts the networks of each loaded version of an .mmdb
// table, once, in the background: walking a city database's tree takes
// about a second, which neither a swap nor a scrape should wait for.
type networkCounts struct {
	mu   sync.Mutex
	n    map[tableVersion]int64
	busy map[tableVersion]bool
}

type tableVersion struct {
	set  *tables.Set // generations count per set: a reload may switch it
	name string
	gen  uint64
}

// get returns the network count of the version of table name loaded at
// generation gen, or false while it is being counted (counting starts at
// the first call).
func (c *networkCounts) get(set *tables.Set, name string, gen uint64) (int64, bool) {
	k := tableVersion{set, name, gen}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.n[k]; ok {
		return n, true
	}
	if c.busy[k] {
		return 0, false
	}
	if c.busy == nil {
		c.busy, c.n = map[tableVersion]bool{}, map[tableVersion]int64{}
	}
	c.busy[k] = true
	go c.count(set, k)
	return 0, false
}

func (c *networkCounts) count(set *tables.Set, k tableVersion) {
	n := walkNetworks(set, k)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.busy, k)
	if n < 0 {
		return // another version is live, or the walk failed: not counted
	}
	for old := range c.n {
		if old.name == k.name {
			delete(c.n, old)
		}
	}
	c.n[k] = n
}

// walkNetworks counts the networks of version k, or returns -1 when
// another version is live or the walk failed. The walk reads the mapped
// file: a file truncated or rewritten in place under it faults, which
// marks the table damaged (as a lookup's fault does) instead of killing
// the daemon.
func walkNetworks(set *tables.Set, k tableVersion) (n int64) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	sn := set.Acquire()
	defer sn.Release()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := set.Fault(r); !ok {
				panic(r)
			}
			n = -1
		}
	}()
	ts, ok := sn.Table(k.name)
	mm := sn.MMDB(k.name)
	if !ok || ts.Generation != k.gen || mm == nil {
		return -1
	}
	for r := range mm.DB().Networks() {
		if r.Err() != nil {
			return -1
		}
		n++
	}
	return n
}

// collectTableRows writes enrichd_table_rows of t: the rows of a .lut
// table, the networks of an .mmdb table (once counted) and its nodes.
func (d *Daemon) collectTableRows(m MetricSink, set *tables.Set, t tables.TableStats) {
	if t.Kind != tables.KindMMDB {
		m.Gauge(mTblRows, float64(t.Rows), t.Name, string(t.Kind))
		return
	}
	m.Gauge(mTblNodes, float64(t.Rows), t.Name)
	if n, ok := d.netCounts.get(set, t.Name, t.Generation); ok {
		m.Gauge(mTblRows, float64(n), t.Name, string(t.Kind))
	}
}
