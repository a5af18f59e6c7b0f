package main

import (
	"io"
	"os"

	"github.com/lutkit/lutkit/tables/tablebuild"
)

// buildMeter is the progress of "lut build": tables done of the
// configuration's, weighted by the size of their sources (known before
// the build starts), with the time left at the rate so far.
type buildMeter struct {
	*countMeter
	weights map[string]int64
}

func newBuildMeter(w io.Writer, mode string, cfg *tablebuild.Config) *buildMeter {
	m := &buildMeter{weights: map[string]int64{}}
	var total int64
	for _, t := range cfg.Tables {
		for _, s := range t.Sources {
			if fi, err := os.Stat(s.Resolved); err == nil {
				m.weights[t.Name] += fi.Size()
				total += fi.Size()
			}
		}
	}
	m.countMeter = newCountMeter(w, progressOn(w, mode), "tables", len(cfg.Tables), total)
	return m
}

// table counts the table of a result.
func (m *buildMeter) table(r tablebuild.TableResult) { m.step(m.weights[r.Name]) }
