package enrichd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/engine"
)

// engines holds the live engine (the compiled rules) and the engines a
// reload retired, whose lookup counters the metrics keep adding.
type engines struct {
	live atomic.Pointer[engine.Engine]

	mu      sync.Mutex
	retired []*engine.Engine
}

// current returns the live engine.
func (e *engines) current() *engine.Engine { return e.live.Load() }

// swap makes eng live, retiring the one that was.
func (e *engines) swap(eng *engine.Engine) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.live.Swap(eng); old != nil {
		e.retired = append(e.retired, old)
	}
}

// stats returns the rule counters of every engine the daemon ran, summed
// by rule name and table, so that they keep counting across reloads.
func (e *engines) stats() []engine.RuleStats {
	e.mu.Lock()
	all := append(append([]*engine.Engine(nil), e.retired...), e.live.Load())
	e.mu.Unlock()
	type key struct {
		name, table string
		mmdb        bool
	}
	var out []engine.RuleStats
	at := map[key]int{}
	for _, eng := range all {
		for _, r := range eng.Stats() {
			k := key{r.Name, r.Table, r.MMDB}
			i, ok := at[k]
			if !ok {
				at[k] = len(out)
				out = append(out, r)
				continue
			}
			o := &out[i]
			o.Hits += r.Hits
			o.Misses += r.Misses
			o.NoTable += r.NoTable
			o.BadKey += r.BadKey
			o.Skipped += r.Skipped
			o.TimeMissing += r.TimeMissing
			o.TimeBad += r.TimeBad
		}
	}
	return out
}

// Reload results, the values of enrichd_config_reloads_total's result.
const (
	reloadOK      = 0
	reloadRefused = 1
)

var reloadResults = [...]string{reloadOK: "success", reloadRefused: "failure"}

var (
	mReloads      = MetricDesc("config_reloads_total", "Configuration reloads (SIGHUP), by result: success, or failure (the configuration was refused and the running one kept).", "result")
	mReloadInputs = MetricDesc("config_reload_inputs_total", "Inputs configuration reloads started (added or changed) and stopped (removed or changed), by action: started, stopped.", "action")
	mReloadTables = MetricDesc("config_reload_table_switches_total", "Configuration reloads that switched the table set (a changed tables section).")
)

// ReloadError is a reload that was refused: the configuration running
// before goes on.
type ReloadError struct{ Err error }

func (e *ReloadError) Error() string { return "configuration reload refused: " + e.Err.Error() }
func (e *ReloadError) Unwrap() error { return e.Err }

// Reload reads the configuration again with load (the file and the flags,
// as at start), checks it as --check-config does (the rules against the
// tables present too), and applies what changed; a reload that does not
// load or check, or that one of these steps refuses, leaves the running
// configuration in place:
//
//   - tables: a changed tables section opens the new set first (one that
//     does not open refuses the reload), checks the rules against it,
//     then switches the set and the engine together between two batches
//     (reload_tables.go); the lookup API and memcached answer from the new
//     set, and the old one is closed once no batch uses it;
//   - inputs: inputs whose configuration did not change keep running, with
//     their listeners and connections; new and changed ones are made
//     (their listeners bound: a failure refuses the reload) before the
//     old ones are drained and closed (reload_inputs.go);
//   - outputs: those that changed are switched between two buffers
//     (reloadOutputs); those that did not stay open;
//   - rules: switched between two batches: every batch is enriched by the
//     rules before or by the rules after, never a mix, and no event is
//     lost.
//
// The pipeline, the persistent queue, the HTTP and memcached listeners,
// logging and the shutdown settings keep running as they are: a reload
// that changes any of them is refused (they need a restart). Every reload
// also reopens the file outputs and the listeners' TLS files (see
// Reopen), is logged with its outcome and what it changed, and counted in
// enrichd_config_reloads_total{result}.
func (d *Daemon) Reload(load func() (*Config, error)) error {
	start := time.Now()
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if d.closing {
		d.reloads[reloadRefused].Add(1)
		return &ReloadError{Err: errors.New("the daemon is shutting down")}
	}
	d.Reopen()
	res, err := d.reload(load)
	took := time.Since(start).Seconds()
	if err != nil {
		d.reloads[reloadRefused].Add(1)
		d.log.Error("configuration reload refused; the running configuration stays", "err", err.Error(), "took_seconds", took)
		return &ReloadError{Err: err}
	}
	d.reloads[reloadOK].Add(1)
	d.inputsStarted.Add(uint64(res.inputsStarted))
	d.inputsStopped.Add(uint64(res.inputsStopped))
	if res.tables {
		d.tableSwitches.Add(1)
	}
	d.log.Info("configuration reloaded", "rules", res.rules, "outputs_opened", res.opened, "outputs_closed", res.closed,
		"inputs_started", res.inputsStarted, "inputs_stopped", res.inputsStopped, "tables_switched", res.tables, "took_seconds", took)
	return nil
}

// reloadResult is what a reload changed.
type reloadResult struct {
	rules                        int
	opened, closed               int // outputs
	inputsStarted, inputsStopped int
	tables                       bool // the table set was switched
}

// reload applies what load returns (see Reload).
func (d *Daemon) reload(load func() (*Config, error)) (res reloadResult, err error) {
	cfg, err := load()
	if err != nil {
		return res, err
	}
	if _, err := CheckTables(cfg); err != nil {
		return res, err
	}
	if changed := restartSections(d.cfg, cfg); len(changed) > 0 {
		return res, fmt.Errorf("%s changed: a reload applies the rules, the tables, the inputs and the outputs only, and these need a restart", strings.Join(changed, ", "))
	}
	newSet, err := d.reloadTables(&cfg.Tables)
	if err != nil {
		return res, err
	}
	set := d.set.Load()
	if newSet != nil {
		set = newSet
		defer func() {
			if err != nil {
				newSet.Close()
			}
		}()
	}
	if set != nil {
		if err := checkRuleTables(set, cfg.Rules, d.log); err != nil {
			return res, err
		}
	}
	rs, opts := cfg.engineRules()
	eng, err := engine.New(rs, opts, set)
	if err != nil {
		return res, err
	}
	if err := d.checkOutputChange(cfg, opts); err != nil {
		return res, err
	}
	// The inputs, then the outputs: a reload either refuses leaves
	// everything else as it runs.
	plan, err := d.prepareInputs(cfg.Inputs)
	if err != nil {
		return res, err
	}
	if res.opened, res.closed, err = d.reloadOutputs(cfg.Outputs); err != nil {
		if plan != nil {
			plan.undo(d)
		}
		return res, err
	}
	if newSet != nil {
		d.switchTables(eng, newSet, cfg.Tables)
		res.tables = true
	} else {
		d.engines.swap(eng)
	}
	if set != nil {
		d.rulesWatch.watch(set, cfg.Rules, d.log)
	}
	res.inputsStarted, res.inputsStopped = d.commitInputs(plan)
	res.rules = len(rs)
	return res, nil
}

// checkOutputChange refuses outputs of cfg that differ from the live ones
// where the running pipeline cannot switch them: with delivery:
// exactly_once (the output's transaction holds the input's offsets), or
// when they need other event fields from the engine (opts) than the live
// outputs do, which the batches enriched before the switch lack.
func (d *Daemon) checkOutputChange(cfg *Config, opts engine.Options) error {
	d.outMu.RLock()
	live := *d.cfg
	live.Outputs = append([]OutputConfig(nil), d.outCfgs...)
	d.outMu.RUnlock()
	if sameValue(live.Outputs, cfg.Outputs) {
		return nil
	}
	if d.cfg.Pipeline.Delivery == ExactlyOnce {
		return errors.New("outputs changed with pipeline.delivery: exactly_once: its transaction holds the input's offsets, so the output changes only at a restart")
	}
	_, lo := live.engineRules()
	if lo.Split != opts.Split || !slices.Equal(lo.EventFields, opts.EventFields) {
		return errors.New("outputs changed the event fields they send events by (a Kafka output's key_field or topic_field, or a Kafka output added or removed): that needs a restart")
	}
	return nil
}

// restartSections returns the sections (and keys) that differ between a
// and b other than the rules, the tables, the inputs and the outputs:
// what a reload cannot apply.
func restartSections(a, b *Config) []string {
	var changed []string
	for _, s := range []struct {
		name string
		a, b any
	}{
		{"pipeline", a.Pipeline, b.Pipeline},
		{"queue", a.Queue, b.Queue},
		{"http", a.HTTP, b.HTTP},
		{"memcached", a.Memcached, b.Memcached},
		{"log", a.Log, b.Log},
		{"shutdown_timeout", a.ShutdownTimeout, b.ShutdownTimeout},
		{"drain_read_grace", a.DrainReadGrace, b.DrainReadGrace},
		{"shutdown", a.Shutdown, b.Shutdown},
	} {
		if !sameValue(s.a, s.b) {
			changed = append(changed, s.name)
		}
	}
	return changed
}

// sameValue compares two sections by their values (where they were
// written does not count: config.At has no exported fields).
func sameValue(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errors.Join(errA, errB) == nil && string(ja) == string(jb)
}
