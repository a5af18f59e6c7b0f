package enrichd

import (
	"fmt"
	"slices"
)

// InputKind describes one type of input to the daemon. An input type is
// one file that defines its settings (if it has any beyond the common
// ones), implements Input, and registers itself from an init function:
//
//	func init() {
//		RegisterInput(InputKind{Type: "tcp", Endpoint: EndpointListen, Format: FormatSyslog,
//			Settings: func() Settings { return &TCPInputConfig{} }, New: newTCPInput})
//	}
type InputKind struct {
	Type InputType
	// Endpoint is the common key that locates the input (listen, path),
	// required for it and refused for other types; EndpointNone for none.
	Endpoint Endpoint
	// Format is the format of its events when the configuration gives
	// none.
	Format Format
	// Settings returns new, empty settings of the type; nil when it has
	// none beyond the common ones.
	Settings func() Settings
}

// OutputKind describes one type of output, as InputKind does an input.
type OutputKind struct {
	Type OutputType
	// Endpoint is the common key that locates the output (path, address).
	Endpoint Endpoint
	// Settings returns new, empty settings of the type; nil when it has
	// none beyond the common ones.
	Settings func() Settings
}

var (
	inputKinds  = map[InputType]*InputKind{}
	outputKinds = map[OutputType]*OutputKind{}
)

// RegisterInput adds a type of input. It panics if the type is taken: a
// registration is a program's own code, not input.
func RegisterInput(k InputKind) {
	if _, dup := inputKinds[k.Type]; dup || k.Type == "" {
		panic(fmt.Sprintf("enrichd: input type %q registered twice", k.Type))
	}
	inputKinds[k.Type] = &k
}

// RegisterOutput adds a type of output; it panics if the type is taken.
func RegisterOutput(k OutputKind) {
	if _, dup := outputKinds[k.Type]; dup || k.Type == "" {
		panic(fmt.Sprintf("enrichd: output type %q registered twice", k.Type))
	}
	outputKinds[k.Type] = &k
}

func sortedTypes[T ~string, K any](m map[T]K) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, string(t))
	}
	slices.Sort(out)
	return out
}

func inputTypes() []string  { return sortedTypes(inputKinds) }
func outputTypes() []string { return sortedTypes(outputKinds) }

// inputEndpoints lists the input types of each endpoint.
func inputEndpoints() map[Endpoint][]string {
	m := map[Endpoint][]string{}
	for t, k := range inputKinds {
		m[k.Endpoint] = append(m[k.Endpoint], string(t))
	}
	return m
}

// outputEndpoints lists the output types of each endpoint.
func outputEndpoints() map[Endpoint][]string {
	m := map[Endpoint][]string{}
	for t, k := range outputKinds {
		m[k.Endpoint] = append(m[k.Endpoint], string(t))
	}
	return m
}
