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
	poll := s.opts.PollInterval
	if poll == 0 {
		poll = DefaultPollInterval
	}
	if w != nil {
		s.wg.Add(1)
		go s.forwardEvents(w)
	}
	s.wg.Add(1)
	go s.watchLoop(poll)
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

func (s *Set) watchLoop(poll time.Duration) {
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
	}
}
