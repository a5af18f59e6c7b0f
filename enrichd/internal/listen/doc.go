// Package listen is where every listener of enrichd gets its TLS and its
// bounds: the TCP syslog input, the HTTP server and the memcached
// listener all accept through a Listener, configured by the same tls: and
// limits: blocks.
//
// A Listener caps the connections open at once (in all and per source
// address), does the TLS handshake within a timeout in the connection's
// own goroutine (so that a slow or silent client holds up no other), checks
// client certificates against a CA bundle and an allow-list of names, and
// counts every refusal by reason, logging them at a bounded rate. The
// certificate and key files, and the client CA bundle, are read again when
// they change on disk (checked at most once a second, on new connections)
// and when Reload is called (SIGHUP): connections made after that get the
// new certificate; those open keep theirs.
package listen
