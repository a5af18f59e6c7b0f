package enrichd

import (
	"errors"
	"io/fs"
	"net"
	"syscall"

	"github.com/lutkit/lutkit/internal/config"
)

// startError places err, which making what the struct at field (of
// configuration at) configures gave at the start, where the
// configuration sets it: at the key the address or path at fault was
// given under (listen: an address that did not bind; path: the file at
// path that did not open), by file, line and column, or at the flag that
// set it, and adds hint when it is not "". An address in use says what
// to do. Another error is placed at the struct, named by what ("input
// NAME") when that is not "".
func (cfg *Config) startError(at *config.At, field, what, path string, err error, hint string) error {
	key := ""
	var op *net.OpError
	var pe *fs.PathError
	switch {
	case errors.As(err, &op) && op.Op == "listen":
		key = "listen"
	case path != "" && errors.As(err, &pe) && pe.Path == path:
		key = "path"
	}
	msg := err.Error()
	if key == "" && what != "" {
		msg = what + ": " + msg
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		hint = "another process, or another enrichd, listens there: stop it, or choose another address"
	}
	if hint != "" {
		msg += " (" + hint + ")"
	}
	v := config.Validator{File: cfg.File}
	v.In(at, field).Errorf(key, "%s", msg)
	return v.Err()
}
