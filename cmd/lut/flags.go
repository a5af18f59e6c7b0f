package main

import (
	"encoding"
	"fmt"
	"strconv"
	"strings"

	"github.com/lutkit/lutkit/internal/config"
)

// The flags of "lut compile" decode into the compilers' own option specs
// (compile.Options, source.Options, iptable.Options, iptable.Source),
// which tables.yaml decodes into as well: typed values are read by the
// same UnmarshalText, and checked by the same Check, with each problem
// named by the flag that set it.

// textPtr is a pointer to a value read from text.
type textPtr[T any] interface {
	*T
	encoding.TextUnmarshaler
}

// textString returns the text form of v for help and defaults.
func textString(v any) string {
	if m, ok := v.(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v)
}

// textValue is a flag holding one value read from text.
type textValue[T any, P textPtr[T]] struct{ p P }

func textVar[T any, P textPtr[T]](p P) *textValue[T, P] { return &textValue[T, P]{p: p} }

func (v *textValue[T, P]) Set(s string) error { return v.p.UnmarshalText([]byte(s)) }
func (v *textValue[T, P]) String() string     { return textString(*v.p) }
func (v *textValue[T, P]) Type() string       { return "string" }

// textSlice is a repeatable flag appending values read from text; with
// sep, one use may also give several values separated by it. Its first
// use replaces the default.
type textSlice[T any, P textPtr[T]] struct {
	dst     *[]T
	sep     string
	changed bool
}

func textSliceVar[T any, P textPtr[T]](dst *[]T, sep string) *textSlice[T, P] {
	return &textSlice[T, P]{dst: dst, sep: sep}
}

func (v *textSlice[T, P]) Set(s string) error {
	if !v.changed {
		*v.dst, v.changed = nil, true
	}
	parts := []string{s}
	if v.sep != "" {
		parts = strings.Split(s, v.sep)
	}
	for _, part := range parts {
		var t T
		if err := P(&t).UnmarshalText([]byte(strings.TrimSpace(part))); err != nil {
			return err
		}
		*v.dst = append(*v.dst, t)
	}
	return nil
}

func (v *textSlice[T, P]) String() string {
	s := make([]string, len(*v.dst))
	for i, t := range *v.dst {
		s[i] = textString(t)
	}
	if v.sep != "" {
		return strings.Join(s, v.sep)
	}
	if len(s) == 0 {
		return ""
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (v *textSlice[T, P]) Type() string {
	if v.sep != "" {
		return "string"
	}
	return "stringArray"
}

// latLonValue is a LAT,LON flag.
type latLonValue struct{ p **[2]float64 }

func (v latLonValue) Set(s string) error {
	la, lo, ok := strings.Cut(s, ",")
	lat, err1 := strconv.ParseFloat(strings.TrimSpace(la), 64)
	lon, err2 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("want LAT,LON, not %q", s)
	}
	if lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return fmt.Errorf("want a latitude of -90 to 90 and a longitude of -180 to 180, not %q", s)
	}
	*v.p = &[2]float64{lat, lon}
	return nil
}

func (v latLonValue) String() string {
	if *v.p == nil {
		return ""
	}
	return fmt.Sprintf("%g,%g", (*v.p)[0], (*v.p)[1])
}

func (v latLonValue) Type() string { return "string" }

// flagsAt records which flag sets each key of a spec (pairs of key and
// flag); key "" names the flags of problems of the spec as a whole.
func flagsAt(pairs ...string) *config.At {
	at := &config.At{}
	for i := 0; i+1 < len(pairs); i += 2 {
		at.SetFlag(pairs[i], pairs[i+1])
	}
	return at
}

// checkFlags runs the checks of the specs the flags decoded into and
// returns every problem, each naming its flag, as one usage error.
func checkFlags(command string, check func(v *config.Validator)) error {
	v := &config.Validator{}
	check(v)
	if v.Err() == nil {
		return nil
	}
	msgs := make([]string, len(v.Errs))
	for i, e := range v.Errs {
		msgs[i] = command + ": " + e.Error()
	}
	return &exitError{code: 2, msg: strings.Join(msgs, "\nlut: ")}
}
