package iptable

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// compileOnce builds an MMDB from sources (in layering order), writes it
// atomically to out and checks it. On any error out is left untouched.
func compileOnce(out string, opts Options, sources []Source) (*Stats, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(sources) == 0 {
		return nil, errors.New("no sources")
	}
	for i := range sources {
		if err := sources[i].Validate(); err != nil {
			return nil, fmt.Errorf("source %s: %w", sources[i].Path, err)
		}
	}
	warnings, err := checkDatabaseType(&opts)
	if err != nil {
		return nil, err
	}
	st := &Stats{Path: out, Profile: opts.Profile, DatabaseType: opts.DatabaseType,
		BuildEpoch: opts.BuildEpoch, Warnings: warnings, AliasMode: opts.IPv4Aliases}
	aliases := newAliasGuard(&opts)
	st.IPv4Aliases = aliases.writesAliases(&opts)
	w, err := newTreeWriter(&opts, st.IPv4Aliases)
	if err != nil {
		return nil, err
	}
	var fixer *locationFixer
	if opts.Profile == ProfileCity {
		fixer = &locationFixer{}
		if dl := opts.DefaultLocation; dl != nil {
			if err := checkLatLon(dl[0], dl[1]); err != nil {
				return nil, fmt.Errorf("default location: %w", err)
			}
			fixer.lat, fixer.lon = dl[0], dl[1]
		}
		w.fix = fixer.fix
	}
	var entries []entry
	for i := range sources {
		src := &sources[i]
		entries = entries[:0]
		emit := func(e entry) error {
			if opts.IPVersion == 4 && !e.prefix.Addr().Is4() {
				return rowError(src, &e, fmt.Errorf("IPv6 network %s in an IPv4 database", e.prefix))
			}
			if err := aliases.check(src, &e); err != nil {
				return err
			}
			entries = append(entries, e)
			return nil
		}
		if err := notLUT(src); err != nil {
			return nil, err
		}
		var rows int
		switch src.Kind {
		case CSVRanges, CSVNetworks:
			rows, err = readCSV(&opts, src, emit)
		case List:
			rows, err = readList(&opts, src, emit)
		case Base:
			rows, _, err = readBase(src, emit)
		default:
			err = fmt.Errorf("%s: unknown source kind %d", src.Path, src.Kind)
		}
		if err != nil {
			return nil, err
		}
		// Less specific first, so that within a source the more specific
		// network wins; equal networks keep file order (later row wins).
		slices.SortStableFunc(entries, func(a, b entry) int { return a.depth() - b.depth() })
		for j := range entries {
			e := &entries[j]
			if err := w.insert(e.prefix, e.value, src.Merge); err != nil {
				return nil, rowError(src, e, fmt.Errorf("%s: %w", e.prefix, err))
			}
			e.value = nil
		}
		st.Sources = append(st.Sources, SourceStats{Path: src.Path, Rows: rows, Networks: len(entries)})
	}
	entries = nil
	err = fsutil.WriteFile(out, func(f *os.File) error {
		// 2 MiB writes at 2 MiB-aligned offsets let the page cache hold
		// the file in huge folios, which readers map with huge pages: a
		// tree walk then misses the TLB far less (see compile.go).
		bw := bufio.NewWriterSize(f, 2<<20)
		if _, err := w.writeTo(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		st.Size = fi.Size()
		nodes, findings, err := Check(f.Name(), opts.Profile)
		st.Nodes, st.Findings = nodes, findings
		if err != nil {
			return fmt.Errorf("self-check of the new file failed: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st.AliasCollisions = aliases.collisions
	if fixer != nil {
		st.DefaultedLocations = fixer.defaulted
	}
	st.Elapsed = time.Since(start)
	return st, nil
}
