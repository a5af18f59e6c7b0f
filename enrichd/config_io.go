package enrichd

import (
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

// Format is how an input's messages are read.
type Format string

// Input formats.
const (
	FormatSyslog Format = "syslog" // RFC 5424 and RFC 3164
	FormatJSON   Format = "json"   // one JSON object per message
	FormatRaw    Format = "raw"    // the message as it is
)

// Validate checks the value.
func (f Format) Validate() error { return config.OneOf(f, FormatSyslog, FormatJSON, FormatRaw) }

// InputType names a kind of input (tcp, udp, file, kafka): see
// RegisterInput.
type InputType string

// InputConfig is one input: the settings every input has, and the
// settings of its type.
type InputConfig struct {
	At             config.At
	Name           string // metric label; default "TYPE:ADDRESS"
	Type           InputType
	Listen         string // inputs that listen (tcp, udp): HOST:PORT
	Path           string // inputs that read a file ("-" is stdin)
	Format         Format // default: the type's (syslog, or raw for files)
	MaxMessageSize int
	// Settings are the type's own settings (*TCPInputConfig,
	// *KafkaInputConfig, ...), nil until decoded or defaulted.
	Settings Settings
}

// Settings are the settings of one type of input or output, beyond the
// common ones. Keys returns the handlers of its keys in the input's or
// output's mapping (field is its path); SetDefaults fills what is not set;
// Validate checks them in the input's or output's scope.
type Settings interface {
	Keys(d *config.Decoder, field string) config.Keys
	SetDefaults()
	Validate(s config.Scope)
}

// OutputType names a kind of output (stdout, file, tcp, kafka): see
// RegisterOutput.
type OutputType string

// OutputConfig is one output: the settings every output has, and the
// settings of its type.
type OutputConfig struct {
	At         config.At
	Name       string
	Type       OutputType
	Path       string // outputs that write a file
	Address    string // outputs that connect to a peer: HOST:PORT
	BufferSize int    // bytes buffered (stream outputs)
	// Settings are the type's own settings (*KafkaOutputConfig), or nil.
	Settings Settings
}

// Endpoint says which common key locates an input or output of a type.
type Endpoint string

// Endpoints.
const (
	EndpointNone    Endpoint = ""
	EndpointListen  Endpoint = "listen"  // inputs: HOST:PORT to listen on
	EndpointPath    Endpoint = "path"    // a file
	EndpointAddress Endpoint = "address" // outputs: HOST:PORT to connect to
)

// inputEndpointHelp and outputEndpointHelp say what a required endpoint
// is, for its error.
var (
	inputEndpointHelp  = map[Endpoint]string{EndpointListen: "HOST:PORT", EndpointPath: `the file to read; "-" is stdin`}
	outputEndpointHelp = map[Endpoint]string{EndpointPath: "the file to append to; for stdout use type: stdout", EndpointAddress: "HOST:PORT"}
)

// kindNames lists types for messages: "a kafka input", "tcp and udp
// inputs".
func kindNames[T ~string](types []T, what string) string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	slices.Sort(names)
	if len(names) == 1 {
		return "a " + names[0] + " " + what
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " " + what + "s"
}

// ioKeys builds the handlers of an input's or output's mapping: the
// common keys, the keys of its own type's settings, and for the keys of
// the other types a handler that says which types take them.
func ioKeys[T ~string](d *config.Decoder, field, what string, common config.Keys, own Settings, others map[T]config.Keys) config.Keys {
	keys := config.Keys{}
	for k, h := range common {
		keys[k] = h
	}
	if own != nil {
		for k, h := range own.Keys(d, field) {
			keys[k] = h
		}
	}
	takers := map[string][]T{}
	for t, ks := range others {
		for k := range ks {
			if _, ok := keys[k]; !ok {
				takers[k] = append(takers[k], t)
			}
		}
	}
	for k, ts := range takers {
		keys[k] = func(v *yaml.Node) {
			if own != nil {
				d.Errorf(v, config.Field(field, k), "only for %s", kindNames(ts, what))
			}
		}
	}
	return keys
}

func decodeInput(d *config.Decoder, n *yaml.Node, field string) InputConfig {
	var in InputConfig
	f := func(key string) string { return config.Field(field, key) }
	// The type decides which other keys the input takes.
	kind := (*InputKind)(nil)
	if tv := config.Lookup(n, "type"); tv != nil && tv.Kind == yaml.ScalarNode {
		if kind = inputKinds[InputType(tv.Value)]; kind != nil && kind.Settings != nil {
			in.Settings = kind.Settings()
		}
	}
	common := config.Keys{
		"name":             func(v *yaml.Node) { in.Name, _ = d.String(v, f("name")) },
		"type":             func(v *yaml.Node) { s, _ := d.String(v, f("type")); in.Type = InputType(s) },
		"format":           func(v *yaml.Node) { s, _ := d.String(v, f("format")); in.Format = Format(s) },
		"max_message_size": func(v *yaml.Node) { in.MaxMessageSize, _ = d.DefaultedSize(v, f("max_message_size")) },
		"listen":           func(v *yaml.Node) { in.Listen, _ = d.String(v, f("listen")) },
		"path": func(v *yaml.Node) {
			p, _ := d.String(v, f("path"))
			in.Path = resolve(dirOf(d), p)
		},
	}
	others := map[InputType]config.Keys{}
	for t, k := range inputKinds {
		if k != kind && k.Settings != nil {
			others[t] = k.Settings().Keys(d, field)
		}
	}
	var own Settings
	if kind != nil {
		own = in.Settings
		if own == nil {
			own = noSettings{}
		}
	}
	d.Mapping(n, field, &in.At, ioKeys(d, field, "input", common, own, others))
	return in
}

func decodeOutput(d *config.Decoder, n *yaml.Node, field string) OutputConfig {
	var o OutputConfig
	f := func(key string) string { return config.Field(field, key) }
	kind := (*OutputKind)(nil)
	if tv := config.Lookup(n, "type"); tv != nil && tv.Kind == yaml.ScalarNode {
		if kind = outputKinds[OutputType(tv.Value)]; kind != nil && kind.Settings != nil {
			o.Settings = kind.Settings()
		}
	}
	common := config.Keys{
		"name": func(v *yaml.Node) { o.Name, _ = d.String(v, f("name")) },
		"type": func(v *yaml.Node) { s, _ := d.String(v, f("type")); o.Type = OutputType(s) },
		"path": func(v *yaml.Node) {
			p, _ := d.String(v, f("path"))
			o.Path = resolve(dirOf(d), p)
		},
		"address":     func(v *yaml.Node) { o.Address, _ = d.String(v, f("address")) },
		"buffer_size": func(v *yaml.Node) { o.BufferSize, _ = d.Size(v, f("buffer_size")) },
	}
	others := map[OutputType]config.Keys{}
	for t, k := range outputKinds {
		if k != kind && k.Settings != nil {
			others[t] = k.Settings().Keys(d, field)
		}
	}
	var own Settings
	if kind != nil {
		own = o.Settings
		if own == nil {
			own = noSettings{}
		}
	}
	d.Mapping(n, field, &o.At, ioKeys(d, field, "output", common, own, others))
	return o
}

// noSettings stands for a type without settings of its own.
type noSettings struct{}

func (noSettings) Keys(*config.Decoder, string) config.Keys { return nil }
func (noSettings) SetDefaults()                             {}
func (noSettings) Validate(config.Scope)                    {}

// Validate checks the input; s is its scope.
func (in *InputConfig) Validate(s config.Scope) {
	kind := inputKinds[in.Type]
	switch {
	case in.Type == "":
		s.Errorf("type", "required (%s)", strings.Join(inputTypes(), ", "))
	case kind == nil:
		s.Errorf("type", "must be one of %s, not %q", strings.Join(inputTypes(), ", "), in.Type)
	}
	if kind == nil {
		if in.Format != "" {
			s.Check("format", in.Format.Validate())
		}
		return
	}
	s.Check("format", in.Format.Validate())
	checkSize(s, "max_message_size", in.MaxMessageSize, MaxBufferBytes)
	checkEndpoint(s, string(in.Type), "input", kind.Endpoint, map[Endpoint]string{EndpointListen: in.Listen, EndpointPath: in.Path}, inputEndpoints(), inputEndpointHelp)
	if in.Settings != nil {
		in.Settings.Validate(s)
	}
}

// Validate checks the output; s is its scope.
func (o *OutputConfig) Validate(s config.Scope) {
	kind := outputKinds[o.Type]
	switch {
	case o.Type == "":
		s.Errorf("type", "required (%s)", strings.Join(outputTypes(), ", "))
		return
	case kind == nil:
		s.Errorf("type", "must be one of %s, not %q", strings.Join(outputTypes(), ", "), o.Type)
		return
	}
	checkSize(s, "buffer_size", o.BufferSize, MaxBufferBytes)
	checkEndpoint(s, string(o.Type), "output", kind.Endpoint, map[Endpoint]string{EndpointPath: o.Path, EndpointAddress: o.Address}, outputEndpoints(), outputEndpointHelp)
	if kind.Endpoint == EndpointPath && o.Path == "-" {
		// "-" is stdin for an input; here it would name a file "-".
		s.Errorf("path", `"-" is not a file an output writes: for stdout use type: stdout`)
	}
	if o.Settings != nil {
		o.Settings.Validate(s)
	}
}

// checkEndpoint checks the common location keys of an input or output of
// type typ: its own is required (and, for an address, well formed), the
// others must not be given. takers lists the types of each endpoint,
// help says what each is.
func checkEndpoint(s config.Scope, typ, what string, own Endpoint, values map[Endpoint]string, takers map[Endpoint][]string, help map[Endpoint]string) {
	for e, v := range values {
		switch {
		case e == own:
			if v == "" {
				s.Errorf(string(e), "required for a %s %s (%s)", typ, what, help[e])
			}
			if e != EndpointPath {
				s.Check(string(e), config.CheckAddr(v))
			}
		case v != "":
			s.Errorf(string(e), "only for %s", kindNames(takers[e], what))
		}
	}
}

func dirOf(d *config.Decoder) string { return filepath.Dir(d.File) }
