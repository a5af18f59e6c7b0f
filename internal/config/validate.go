package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Validator collects the errors of Validate methods. Start it with the
// errors of the Decoder that read the file, so that one list holds them
// all.
type Validator struct {
	File string
	Errs Errors
}

// Err returns the errors found, sorted by position, or nil.
func (v *Validator) Err() error {
	v.Errs.Sort()
	return v.Errs.Err()
}

// In returns the scope of a struct: its At and its field path.
func (v *Validator) In(at *At, field string) Scope {
	if at == nil {
		at = &At{}
	}
	return Scope{v: v, at: at, field: field}
}

// Scope reports the problems of one struct: each error is placed where
// the key at fault was written (or, for a key that was not given, where
// the struct was), and names the flag that set it instead when a flag
// did.
type Scope struct {
	v     *Validator
	at    *At
	field string
}

// Field returns the path of key in the scope.
func (s Scope) Field(key string) string { return Field(s.field, key) }

// Given reports whether key was given.
func (s Scope) Given(key string) bool { return s.at.Given(key) }

// In returns the scope of a struct nested at key (a sub-mapping, or a
// list element "[i]").
func (s Scope) In(at *At, key string) Scope {
	if at == nil {
		at = &At{}
	}
	if at.self.flag == "" && at.self.pos == (Pos{}) {
		// A struct made in code inside a decoded one is placed at its key.
		at.self = origin{pos: s.at.KeyPos(key), flag: s.at.Flag(key)}
	}
	return Scope{v: s.v, at: at, field: Field(s.field, key)}
}

// Errorf reports a problem with key ("": the struct as a whole), unless
// that key (or the struct) already failed to decode.
func (s Scope) Errorf(key, format string, args ...any) {
	if s.at.Failed(key) || s.at.Failed("") {
		return
	}
	e := &Error{Field: s.Field(key), Msg: fmt.Sprintf(format, args...)}
	if flag := s.at.Flag(key); flag != "" {
		e.Field = flag
	} else {
		p := s.at.KeyPos(key)
		e.File, e.Line, e.Column = s.v.File, p.Line, p.Column
	}
	s.v.Errs = append(s.v.Errs, e)
}

// Check reports err, when it is not nil, as a problem with key.
func (s Scope) Check(key string, err error) {
	if err != nil {
		s.Errorf(key, "%v", err)
	}
}

// NotZero reports key given as 0 (zero) where a key left out takes its
// default, def: 0 is then neither the default nor "none", and is
// refused. allowed says what the key takes ("a duration such as 10s").
func (s Scope) NotZero(key string, zero bool, allowed string, def any) {
	if !zero || !s.Given(key) {
		return
	}
	if d, ok := def.(time.Duration); ok {
		// As it is written: 1m, not 1m0s.
		t := d.String()
		if strings.HasSuffix(t, "m0s") {
			t = strings.TrimSuffix(t, "0s")
		}
		if strings.HasSuffix(t, "h0m") {
			t = strings.TrimSuffix(t, "0m")
		}
		def = t
	}
	s.Errorf(key, "must be %s, not 0 (leave %s out for the default, %v)", allowed, key, def)
}

// Require reports key as required when it is unset (zero), with why.
func (s Scope) Require(key string, set bool, why string) {
	if !set {
		if why == "" {
			s.Errorf(key, "required")
			return
		}
		s.Errorf(key, "required: %s", why)
	}
}

// OneOf checks a value of a typed enum: nil when v is one of allowed.
func OneOf[T ~string](v T, allowed ...T) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return fmt.Errorf("must be one of %s, not %q", strings.Join(names, ", "), string(v))
}

// CheckAddr checks a HOST:PORT address ("" is left to Require): the port
// is a number from 0 to 65535, the host empty, an IP address or a name.
func CheckAddr(s string) error {
	if s == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("must be HOST:PORT: %w", err)
	}
	if p, err := strconv.ParseUint(port, 10, 64); err != nil || p > 65535 {
		return fmt.Errorf("must be HOST:PORT with a port from 0 to 65535, not %q", port)
	}
	if strings.ContainsAny(host, " /\t") {
		return fmt.Errorf("must be HOST:PORT: %q is not a host name or IP address", host)
	}
	return nil
}
