// Package serve answers table lookups for clients that are not enrichd
// pipelines: an HTTP JSON API (for Logstash's http filter and anything
// else that speaks HTTP) and a read-only memcached listener, text, meta and
// binary protocols (for Logstash's memcached filter and memcached
// clients). Both read the live table set of a running enrichd, so they
// always see the current version of every table. A row is written as
// every program of the project writes it (internal/rowjson).
package serve

import (
	"bytes"
	"net/netip"
	"unsafe"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/rowjson"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// bstr views b as a string without copying; b must not change while the
// string is in use.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// sbytes views s as a byte slice without copying; it must not be written.
func sbytes(s string) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// appendRow appends the row v of t as a JSON object of column name ->
// value, as every program of the project writes a row (package rowjson).
func appendRow(dst []byte, t *reader.Table, v reader.View) []byte {
	return rowjson.Append(dst, t.Columns(), t.ColumnTypes(), v)
}

// tableKey turns a client key into the table's lookup key: for a table
// with several key columns the parts, joined by sep in the request, are
// joined by format.KeySeparator. It rewrites into buf when it has to and
// returns the key and buf (grown).
func tableKey(t *reader.Table, key []byte, sep []byte, buf []byte) ([]byte, []byte) {
	if len(t.KeyColumns()) < 2 || len(sep) == 0 || bytes.IndexByte(key, format.KeySeparator) >= 0 {
		return key, buf
	}
	buf = buf[:0]
	for {
		i := bytes.Index(key, sep)
		if i < 0 {
			buf = append(buf, key...)
			return buf, buf
		}
		buf = append(buf, key[:i]...)
		buf = append(buf, format.KeySeparator)
		key = key[i+len(sep):]
	}
}

// appendRecord looks an address up in an .mmdb table and appends
// {"network":..., "record":{...}}. It reports false when the address is
// not found (nothing is appended) and returns an error for a key that is
// not an IP address.
func appendRecord(dst []byte, m *mmdb.Reader, key []byte) ([]byte, bool, error) {
	ip, err := netip.ParseAddr(bstr(key))
	if err != nil {
		return dst, false, err
	}
	start := len(dst)
	dst = append(dst, `{"network":"`...)
	mark := len(dst)
	dst = append(dst, `","record":`...)
	dst, match, err := m.AppendRecordJSON(dst, ip)
	if err != nil || !match.Found() {
		return dst[:start], false, err
	}
	// The network is known only after the lookup: write it into its place.
	var pfx [64]byte
	p := match.Prefix().AppendTo(pfx[:0])
	dst = append(dst, make([]byte, len(p))...) // grow by len(p) (no allocation when dst has room)
	copy(dst[mark+len(p):], dst[mark:len(dst)-len(p)])
	copy(dst[mark:], p)
	return append(dst, '}'), true, nil
}
