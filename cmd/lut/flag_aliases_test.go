package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestOutFlagEverywhere checks that every command writing a file names it
// --out/-o, and that export's older --output still works, hidden from the
// help.
func TestOutFlagEverywhere(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if (f.Name == "output" || f.Name == "dest") && !f.Hidden {
				t.Errorf("lut %s: --%s, want --out", c.CommandPath(), f.Name)
			}
			if f.Shorthand == "o" && f.Name != "out" {
				t.Errorf("lut %s: -o is --%s, want --out", c.CommandPath(), f.Name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCommand())

	dir := t.TempDir()
	tbl := filepath.Join(dir, "t.lut")
	writeFile(t, filepath.Join(dir, "t.csv"), "k,v\n1,a\n2,b\n")
	mustRun(t, "compile", "--key", "k", "--out", tbl, filepath.Join(dir, "t.csv"))
	for _, flag := range []string{"--out", "-o", "--output"} {
		out := filepath.Join(dir, strings.TrimLeft(flag, "-")+".csv")
		mustRun(t, "export", tbl, flag, out)
		if b, err := os.ReadFile(out); err != nil || string(b) != "k,v\n1,a\n2,b\n" {
			t.Errorf("export %s: %q %v", flag, b, err)
		}
	}
	help := mustRun(t, "export", "--help")
	if strings.Contains(help, "--output") || !strings.Contains(help, "-o, --out") {
		t.Errorf("export --help:\n%s", help)
	}
}
