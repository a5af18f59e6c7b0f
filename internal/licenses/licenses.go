// Package licenses holds the licences of the third-party Go modules
// linked into lut and enrichd (third_party.txt, embedded), which
// "lut licenses" prints. The file is generated from the module cache by
//
//	go generate ./internal/licenses
//
// and a test checks that it is current with go.mod.
package licenses

import (
	_ "embed"
	"strings"
)

//go:generate go run ./gen -out third_party.txt

// Text is third_party.txt: a header, one line per module (path, version,
// licence), then each module's licence and notice files in full.
//
//go:embed third_party.txt
var Text string

// Module is one line of the list at the top of Text.
type Module struct {
	Path, Version, License string
}

// Modules returns the list at the top of Text.
func Modules() []Module {
	var mods []Module
	for _, line := range strings.Split(Text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line == "" {
			break
		}
		f := strings.Fields(line)
		if len(f) == 3 {
			mods = append(mods, Module{Path: f[0], Version: f[1], License: f[2]})
		}
	}
	return mods
}

// Texts returns the licence and notice texts that follow the list.
func Texts() string {
	if _, rest, ok := strings.Cut(Text, "\n\n"); ok {
		return rest
	}
	return ""
}
