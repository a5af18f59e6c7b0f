package enrichd

import (
	"testing"
	"time"
)

// TestConfigZeroLimits: a limit of an input or a server whose default is
// what leaving it out gives is refused when given as 0, which would be
// neither that default nor "no limit": the error names the key and its
// input, says what it takes and that leaving it out gives the default.
// The limits for which 0 means something (no cap, never) take it.
func TestConfigZeroLimits(t *testing.T) {
	in := "inputs: [{type: file, path: x}]\n"
	out := "outputs: [{type: stdout}]\n"
	for _, tc := range []struct{ yml, want string }{
		{"inputs:\n  - {type: tcp, listen: \"x:1\", max_connections: 0}\n" + out,
			`e.yaml:2:49: inputs[0].max_connections: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_connections out for the default)`},
		{"inputs:\n  - {type: tcp, listen: \"x:1\", limits: {max_connections: 0}}\n" + out,
			`e.yaml:2:58: inputs[0].limits.max_connections: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_connections out for the default)`},
		{"inputs:\n  - {type: relp, listen: \"x:1\", limits: {handshake_timeout: 0s}}\n" + out,
			`e.yaml:2:61: inputs[0].limits.handshake_timeout: must be a duration such as 10s, not 0 (leave handshake_timeout out for the default, 10s)`},
		{"inputs:\n  - {type: tcp, listen: \"x:1\"}\n  - {type: tcp, listen: \"x:2\", limits: {handshake_timeout: \"0\"}}\n" + out,
			`e.yaml:3:60: inputs[1].limits.handshake_timeout: must be a duration such as 10s, not 0 (leave handshake_timeout out for the default, 10s)`},
		{"inputs:\n  - {type: tcp, listen: \"x:1\", max_message_size: 0}\n" + out,
			`e.yaml:2:50: inputs[0].max_message_size: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_message_size out for the default)`},
		{"inputs:\n  - {type: udp, listen: \"x:1\", read_buffer: 0}\n" + out,
			`e.yaml:2:45: inputs[0].read_buffer: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave read_buffer out for the default)`},
		{in + out + "http: {listen: \"x:1\", read_header_timeout: 0s}\n",
			`e.yaml:3:44: http.read_header_timeout: must be a duration such as 10s, not 0 (leave read_header_timeout out for the default, 10s)`},
		{in + out + "http: {listen: \"x:1\", request_timeout: 0s}\n",
			`e.yaml:3:40: http.request_timeout: must be a duration such as 10s, not 0 (leave request_timeout out for the default, 1m)`},
		{in + out + "http: {listen: \"x:1\", max_header_bytes: 0}\n",
			`e.yaml:3:41: http.max_header_bytes: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_header_bytes out for the default)`},
		{in + out + "http: {listen: \"x:1\", max_body_bytes: 0}\n",
			`e.yaml:3:39: http.max_body_bytes: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_body_bytes out for the default)`},
		{in + out + "http: {listen: \"x:1\", limits: {max_connections: 0}}\n",
			`e.yaml:3:49: http.limits.max_connections: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_connections out for the default)`},
		{in + out + "http: {listen: \"x:1\", limits: {handshake_timeout: 0s}}\n",
			`e.yaml:3:51: http.limits.handshake_timeout: must be a duration such as 10s, not 0 (leave handshake_timeout out for the default, 10s)`},
		{in + out + "tables: {path: d}\nmemcached: {listen: \"x:1\", max_connections: 0}\n",
			`e.yaml:4:45: memcached.max_connections: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_connections out for the default)`},
		{in + out + "tables: {path: d}\nmemcached: {listen: \"x:1\", limits: {handshake_timeout: 0s}}\n",
			`e.yaml:4:56: memcached.limits.handshake_timeout: must be a duration such as 10s, not 0 (leave handshake_timeout out for the default, 10s)`},
	} {
		errs := configErrors(t, tc.yml)
		if len(errs) != 1 || errs[0] != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.yml, errs, tc.want)
		}
	}

	// Left out, each takes its default; 0 where it means "none" is taken.
	cfg, err := ParseConfig("e.yaml", []byte(`
inputs:
  - {type: tcp, listen: "x:1", limits: {max_connections_per_source: 0, idle_timeout: 0s}}
  - {type: udp, listen: "x:2"}
outputs: [{type: stdout}]
http: {listen: "x:3", limits: {idle_timeout: 0s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	tcp := cfg.Inputs[0].Settings.(*TCPInputConfig).Limits
	if tcp.MaxConnections != DefaultMaxConnections || tcp.HandshakeTimeout != 10*time.Second || tcp.MaxConnectionsPerSource != 0 || tcp.IdleTimeout != 0 ||
		cfg.Inputs[0].MaxMessageSize != DefaultMaxMessageSize {
		t.Errorf("tcp input: %+v, max_message_size %d", tcp, cfg.Inputs[0].MaxMessageSize)
	}
	if rb := cfg.Inputs[1].Settings.(*UDPInputConfig).ReadBuffer; rb != DefaultUDPReadBuffer {
		t.Errorf("udp read_buffer %d, want %d", rb, DefaultUDPReadBuffer)
	}
	h := cfg.HTTP
	if h.ReadHeaderTimeout != DefaultHTTPReadHeaderTimeout || h.RequestTimeout != DefaultHTTPRequestTimeout || h.MaxHeaderBytes != DefaultHTTPMaxHeaderBytes ||
		h.Conn.Limits.MaxConnections != DefaultHTTPMaxConnections || h.Conn.Limits.HandshakeTimeout != 10*time.Second || h.Conn.Limits.IdleTimeout != 0 {
		t.Errorf("http: %+v", h)
	}
}
