// Package parse turns raw syslog and JSON input into fields, without
// allocating on the enrichd hot path.
//
// It has one job: framing TCP syslog streams (Framer), parsing syslog
// headers (ParseSyslog) and writing their timestamps
// (AppendTimestampRFC3339), and pulling key=value and JSON fields out of
// message bodies (KV, Extractor, EachKV, JSONField). Writing JSON is
// package jsonstr's. It does no I/O of its own apart from reading the
// io.Reader handed to a Framer, and it never logs.
//
// Lifetime rule: every []byte this package returns aliases its input. A
// message from Framer.Next aliases the Framer's internal buffer and is
// valid only until the next call to Next or Reset. Event fields, KV
// values, Extractor values and JSONField values alias the slice that was
// parsed and are valid for as long as that slice is unchanged, which for
// framed input means until the next Framer.Next. Copy anything that must
// outlive that.
//
// None of the types are safe for concurrent use; use one Framer and one
// Event per connection goroutine. An Extractor is read-only after
// NewExtractor and may be shared.
package parse
