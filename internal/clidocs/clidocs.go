// Package clidocs writes the man pages and shell completions of a cobra
// command tree (lut's, enrichd's), which the Debian package installs. The
// programs link it only when built with -tags gendocs (see the Makefile's
// package target), so the released binaries do not carry it.
package clidocs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Generate writes, under dir, the man pages of root and of each of its
// commands (man/man1/NAME.1, NAME-COMMAND.1) and its completions for bash
// (completions/bash/NAME), zsh (completions/zsh/_NAME) and fish
// (completions/fish/NAME.fish). The pages are dated SOURCE_DATE_EPOCH
// when it is set (reproducible builds), today otherwise; source is what
// their footer names (the package and version).
func Generate(root *cobra.Command, dir, source string) error {
	date := time.Now().UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		date = time.Unix(sec, 0).UTC()
	}
	man := filepath.Join(dir, "man", "man1")
	if err := os.MkdirAll(man, 0o755); err != nil {
		return err
	}
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Section: "1", Source: source, Manual: "lutkit manual", Date: &date}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	name := root.Name()
	for _, c := range []struct {
		path string
		gen  func(string) error
	}{
		{filepath.Join(dir, "completions", "bash", name), func(p string) error { return root.GenBashCompletionFileV2(p, true) }},
		{filepath.Join(dir, "completions", "zsh", "_"+name), root.GenZshCompletionFile},
		{filepath.Join(dir, "completions", "fish", name+".fish"), func(p string) error { return root.GenFishCompletionFile(p, true) }},
	} {
		if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
			return err
		}
		if err := c.gen(c.path); err != nil {
			return fmt.Errorf("completion %s: %w", c.path, err)
		}
	}
	return nil
}
