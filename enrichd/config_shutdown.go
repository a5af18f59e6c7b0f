package enrichd

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

// ShutdownConfig is the shutdown: section.
type ShutdownConfig struct {
	At config.At
	// DrainDelay is how long, on SIGTERM, /readyz answers 503 while
	// everything still works (inputs accept, events flow) before the
	// drain begins: the time a load balancer or a Kubernetes Service
	// needs to stop sending new connections. 0 (the default): none.
	DrainDelay time.Duration
}

func (s *ShutdownConfig) decode(d *config.Decoder, n *yaml.Node) {
	d.Mapping(n, "shutdown", &s.At, config.Keys{
		"drain_delay": func(v *yaml.Node) { s.DrainDelay, _ = d.Duration(v, "shutdown.drain_delay") },
	})
}
