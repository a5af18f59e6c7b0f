package tables

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// startWatch starts the goroutine that reloads the set on file system
// notifications and on every poll tick.
func (s *Set) startWatch() {
	var w *fsnotify.Watcher
	if !s.opts.NoNotify {
		var err error
		w, err = fsnotify.NewWatcher()
		if err == nil {
			err = w.Add(s.dir)
		}
		if err != nil {
			s.log.Warn("tables: file notifications unavailable, polling only", "dir", s.dir, "reason", err.Error())
			if w != nil {
				w.Close()
				w = nil
			}
		}
	}
	s.notifyOn.Store(w != nil)
	if w != nil {
		s.watchedDir, _ = statID(s.dir)
	}
	poll := s.opts.PollInterval
	if poll == 0 {
		poll = DefaultPollInterval
	}
	if w != nil {
		s.wg.Add(1)
		go s.forwardEvents(w)
	}
	s.wg.Add(1)
	go s.watchLoop(poll, w)
}

// forwardEvents turns relevant notifications into load triggers.
func (s *Set) forwardEvents(w *fsnotify.Watcher) {
	defer s.wg.Done()
	defer w.Close()
	manifest := ManifestName
	if s.manifestPath != "" {
		manifest = filepath.Base(s.manifestPath)
	}
	for {
		select {
		case <-s.done:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			base := filepath.Base(ev.Name)
			if strings.HasPrefix(base, ".") && base != manifest {
				continue // temporary files of an atomic write
			}
			s.kick()
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: check everything.
			s.log.Warn("tables: file notification error", "dir", s.dir, "reason", err.Error())
			s.kick()
		}
	}
}

// kick asks the watch loop for a load without blocking.
func (s *Set) kick() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

func (s *Set) watchLoop(poll time.Duration, w *fsnotify.Watcher) {
	defer s.wg.Done()
	var tick <-chan time.Time
	if poll > 0 {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.done:
			return
		case <-s.trigger:
		case <-tick:
		}
		_ = s.load(false) // rejections are logged and counted by load
		if w != nil {
			s.checkWatch(w)
		}
	}
}

// checkWatch follows the directory's identity: a watch ends with the
// directory it watches (removed, or renamed away), so when the directory
// is gone notifications are reported off, and when one is back at its
// path it is watched again and looked at at once.
func (s *Set) checkWatch(w *fsnotify.Watcher) {
	id, err := statID(s.dir)
	if err != nil {
		if s.notifyOn.Swap(false) {
			s.log.Warn("tables: the directory is gone; file notifications stop until it is back (polling goes on)", "dir", s.dir)
		}
		return
	}
	if s.notifyOn.Load() && id.dev == s.watchedDir.dev && id.ino == s.watchedDir.ino {
		return
	}
	if err := w.Add(s.dir); err != nil {
		return
	}
	s.watchedDir = id
	if !s.notifyOn.Swap(true) {
		s.log.Info("tables: the directory is back; file notifications resume", "dir", s.dir)
	}
	_ = s.load(false)
}
