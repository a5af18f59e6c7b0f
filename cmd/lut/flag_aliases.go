package main

import (
	"github.com/spf13/pflag"
)

// hiddenAlias registers name as a hidden second spelling of the flag
// target (an older name kept so that existing scripts keep working):
// setting it sets target's value.
func hiddenAlias(f *pflag.FlagSet, name, target string) {
	t := f.Lookup(target)
	f.Var(t.Value, name, "alias of --"+target)
	if err := f.MarkHidden(name); err != nil {
		panic(err)
	}
}
