package enrichd

import (
	"fmt"
	"net"

	"github.com/lutkit/lutkit/internal/config"
)

// checkListeners reports a listener whose address another one of the
// same network (tcp, udp) already takes: the inputs', http.listen and
// memcached.listen. A wildcard host (empty, 0.0.0.0, ::) takes its port
// on every address; port 0 is a free port each.
func (cfg *Config) checkListeners(s config.Scope) {
	type listener struct {
		network, host, port string
		what                string
	}
	var seen []listener
	take := func(sc config.Scope, key, network, addr, what string) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "0" {
			return // a malformed address is reported by its own check
		}
		if network == "" {
			network = "tcp"
		}
		for _, l := range seen {
			if l.network == network && l.port == port && (l.host == host || wildcardHost(l.host) || wildcardHost(host)) {
				sc.Errorf(key, "%s %s overlaps %s of %s: two listeners cannot share an address", network, addr, net.JoinHostPort(l.host, l.port), l.what)
				return
			}
		}
		seen = append(seen, listener{network, host, port, what})
	}
	for i := range cfg.Inputs {
		in := &cfg.Inputs[i]
		kind := inputKinds[in.Type]
		if kind == nil || kind.Endpoint != EndpointListen || in.Listen == "" {
			continue
		}
		field := config.Index("inputs", i)
		take(s.In(&in.At, field), "listen", kind.Network, in.Listen, fmt.Sprintf("%s (%s)", field, in.Name))
	}
	if cfg.HTTP.Listen != "" {
		take(s.In(&cfg.HTTP.At, "http"), "listen", "tcp", cfg.HTTP.Listen, "http.listen")
	}
	if cfg.Memcached.Listen != "" {
		take(s.In(&cfg.Memcached.At, "memcached"), "listen", "tcp", cfg.Memcached.Listen, "memcached.listen")
	}
}

func wildcardHost(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
