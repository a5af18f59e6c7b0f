// Package syslog holds the syslog interop tests: real senders (logger from
// util-linux, rsyslog's omfwd with its forwarding templates, syslog-ng's
// syslog() and network() destinations) forward thousands of events to a
// built enrichd over 127.0.0.1, and every event must arrive exactly once
// with the host, app name, procid, msgid, timestamp and message that the
// sender itself parsed. The receiver test sends the same bytes to rsyslog,
// syslog-ng and enrichd and compares their parses field by field.
//
// The package has no code of its own: everything is in its tests. See
// docs/interop.md (section syslog) for what each test checks.
package syslog
