//go:build gendocs

package main

import (
	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/internal/clidocs"
	"github.com/lutkit/lutkit/internal/version"
)

func init() {
	genDocs = func(root *cobra.Command, dir string) error {
		return clidocs.Generate(root, dir, "lutkit "+version.Version)
	}
}
