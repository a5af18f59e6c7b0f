package tables

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"
)

// openRemote opens a set whose versions come from a store: it checks the
// store once, then serves the cache's current version: the one just
// fetched, or, when the store is unreachable or its version is rejected,
// the last verified one (reported stale until a check succeeds).
func openRemote(path string, opts Options) (*Set, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ro := opts.Remote
	r, err := newRemote(path, &ro, log)
	if err != nil {
		return nil, err
	}
	_, cerr := r.check(context.Background())
	mp := r.cachedManifest()
	if cerr != nil {
		if mp == "" {
			r.close()
			if r.manifestDamaged() {
				return nil, fmt.Errorf("%w (the cache %s holds no other version to serve: start again once the store answers)", cerr, ro.CacheDir)
			}
			return nil, fmt.Errorf("%w (the cache %s holds no earlier version to serve)", cerr, ro.CacheDir)
		}
		log.Warn("tables: serving the cached version, stale", "source", r.st.location(), "version", r.state.Current,
			"last_success", r.state.CheckedAt, "reason", cerr.Error())
	}
	inner := opts
	inner.Logger = log
	set, err := openLocal(mp, inner, r)
	if err == nil {
		return set, nil
	}
	// The cache's version does not load: an artifact damaged on disk
	// since it was verified. Those that fail their checks are fetched
	// again from the store, then the version is loaded again.
	n, rerr := r.repair(context.Background(), nil)
	if rerr != nil {
		r.close()
		return nil, fmt.Errorf("%w (repairing the cache: %w)", err, rerr)
	}
	if n == 0 {
		r.close()
		return nil, err
	}
	log.Warn("tables: the cached version did not load; its damaged artifacts were fetched again", "source", r.st.location(),
		"version", r.state.Current, "artifacts", n, "reason", err.Error())
	set, err = openLocal(mp, inner, r)
	if err != nil {
		r.close()
	}
	return set, err
}

// startRemote starts the goroutine that checks the store every poll
// interval, give or take a tenth drawn at random each time: nodes started
// together (after a fleet restart) spread their checks out instead of
// asking the store all at once.
func (s *Set) startRemote() {
	poll := s.opts.PollInterval
	if poll == 0 {
		poll = DefaultRemotePollInterval
	}
	if poll < 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(jitter(poll))
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
			case <-s.trigger:
				t.Stop()
			}
			_ = s.checkRemote() // failures are logged and counted
			t.Reset(jitter(poll))
		}
	}()
}

// jitter returns d plus or minus up to a tenth.
func jitter(d time.Duration) time.Duration {
	spread := d / 5
	if spread <= 0 {
		return d
	}
	return d - spread/2 + rand.N(spread)
}

// checkRemote checks the store and publishes a version it installed.
func (s *Set) checkRemote() error {
	s.remoteMu.Lock()
	defer s.remoteMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	repaired := s.repairDamaged()
	installed, err := s.remote.check(s.remoteCtx)
	if err != nil {
		if s.remoteCtx.Err() != nil {
			return nil // closing
		}
		if installed || repaired {
			_ = s.load(false) // rejections are logged and counted by load
		}
		if reason, _ := reasonOf(err); rejectsVersion(reason) {
			loc := s.remote.st.location()
			s.reject(&RejectError{File: loc, Err: &trimmed{msg: strings.TrimPrefix(err.Error(), loc+": "), err: err}})
		} else {
			s.log.Warn("tables: checking the store failed; serving the current version", "source", s.remote.st.location(),
				"reason", err.Error(), "generation", s.cur.Load().gen)
		}
		return err
	}
	if installed || repaired {
		return s.load(false)
	}
	return nil
}

// repairDamaged checks again, and fetches again if bad, the cached
// artifacts of the tables marked damaged since the last load (a memory
// fault, a file changed in place), as a local set looks at a damaged
// file again at once. It reports whether the next load should reopen
// them; when the store cannot be reached the damage stays marked and the
// next check tries again.
func (s *Set) repairDamaged() bool {
	if !s.recheck.Load() {
		return false
	}
	names := map[string]bool{}
	for _, e := range s.cur.Load().list {
		if e.damaged.Load() {
			names[filepath.Base(e.path)] = true
		}
	}
	if len(names) == 0 {
		return true
	}
	n, err := s.remote.repair(s.remoteCtx, names)
	if err != nil {
		if s.remoteCtx.Err() == nil {
			s.log.Warn("tables: a damaged table could not be fetched again; its lookups miss", "reason", err.Error())
		}
		return false
	}
	if n > 0 {
		s.log.Info("tables: damaged tables fetched again from the store", "source", s.remote.st.location(), "artifacts", n)
	}
	return true
}

// rejectsVersion reports whether a failure of that reason rejects the
// published version (rather than failing to reach the store).
func rejectsVersion(reason string) bool {
	switch reason {
	case ReasonManifest, ReasonSizeLimit, ReasonSize, ReasonDigest, ReasonStructure, ReasonNotFound:
		return true
	}
	return false
}
