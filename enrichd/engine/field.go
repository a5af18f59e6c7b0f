package engine

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/jsonstr"
)

// fieldKind is where a rule's source field is read from.
type fieldKind uint8

const (
	fkAuto fieldKind = iota // key=value pair, or JSON member for JSON events
	fkKV
	fkJSON
	fkSD
	fkHost
	fkApp
	fkProcID
	fkMsgID
	fkMessage
	fkTLSClient
	fkRule // what an earlier rule wrote (field_chain.go)
)

type fieldRef struct {
	kind   fieldKind
	name   []byte // kv key or JSON path
	sdID   []byte
	kvSlot int
	// fkRule: the rule, the index of the field in its chainCols (.lut)
	// or MMDBFields (-1: only a default), the column name while parsing,
	// and the rule's default for the field.
	rule   int
	col    int
	column string
	def    []byte
}

// CheckField checks an event field name as a rule's field, or an
// output's key or topic field, names it.
func CheckField(name string) error {
	_, err := parseFieldRef(name)
	return err
}

// parseFieldRef parses a rule's source field: "kv.NAME", "json.PATH",
// "sd.ID.NAME", a syslog header field (host.name, log.syslog.appname,
// process.pid, log.syslog.msgid, message), the verified TLS client
// certificate's subject (tls.client.subject), or a bare NAME (a key=value
// pair, or the JSON member NAME for JSON input).
func parseFieldRef(s string) (fieldRef, error) {
	switch s {
	case "":
		return fieldRef{}, fmt.Errorf("empty field name")
	case "host.name", "host":
		return fieldRef{kind: fkHost}, nil
	case "log.syslog.appname", "appname":
		return fieldRef{kind: fkApp}, nil
	case "process.pid", "log.syslog.procid":
		return fieldRef{kind: fkProcID}, nil
	case "log.syslog.msgid":
		return fieldRef{kind: fkMsgID}, nil
	case "message":
		return fieldRef{kind: fkMessage}, nil
	case "tls.client.subject":
		return fieldRef{kind: fkTLSClient}, nil
	}
	switch {
	case strings.HasPrefix(s, "kv."):
		if len(s) == 3 {
			return fieldRef{}, fmt.Errorf("field %q: empty key", s)
		}
		return fieldRef{kind: fkKV, name: []byte(s[3:])}, nil
	case strings.HasPrefix(s, "json."):
		if len(s) == 5 {
			return fieldRef{}, fmt.Errorf("field %q: empty path", s)
		}
		return fieldRef{kind: fkJSON, name: []byte(s[5:])}, nil
	case strings.HasPrefix(s, "sd."):
		rest := s[3:]
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 || i == len(rest)-1 {
			return fieldRef{}, fmt.Errorf("field %q: want sd.SD-ID.PARAM-NAME", s)
		}
		return fieldRef{kind: fkSD, sdID: []byte(rest[:i]), name: []byte(rest[i+1:])}, nil
	}
	return fieldRef{kind: fkAuto, name: []byte(s)}, nil
}

// fieldRef parses an event field name, giving key=value names a slot in
// the extractor (kvIndex maps the names seen so far to their slots).
func (p *Engine) fieldRef(f string, kvIndex map[string]int) (fieldRef, error) {
	fr, err := parseFieldRef(f)
	if err != nil {
		return fr, err
	}
	fr.kvSlot = -1
	if fr.kind == fkAuto || fr.kind == fkKV {
		k := string(fr.name)
		j, ok := kvIndex[k]
		if !ok {
			j = len(p.kvKeys)
			kvIndex[k] = j
			p.kvKeys = append(p.kvKeys, k)
			p.kvKeyJSON = append(p.kvKeyJSON, newMemberKey(jsonstr.AppendKeyS([]byte{','}, k)))
		}
		fr.kvSlot = j
	}
	return fr, nil
}

// EventField returns the index in Lines.Field of one of
// Options.EventFields, or -1 for "" (or a field not given).
func (p *Engine) EventField(name string) int {
	if name == "" {
		return -1
	}
	return slices.Index(p.outNames, name)
}

// fieldValue returns event e's value of f, or nil.
func (w *Worker) fieldValue(i int, e *evState, f *fieldRef) []byte {
	switch f.kind {
	case fkAuto:
		if e.kind == JSON {
			return w.jsonValue(e.body, f.name)
		}
		return w.kvVals[i*len(w.p.kvKeys)+f.kvSlot]
	case fkKV:
		if e.kind == JSON {
			return nil
		}
		return w.kvVals[i*len(w.p.kvKeys)+f.kvSlot]
	case fkJSON:
		return w.jsonValue(e.body, f.name)
	case fkSD:
		var v []byte
		parse.EachSDParam(e.ev.StructuredData, func(id, name, value []byte) bool {
			if bytes.Equal(id, f.sdID) && bytes.Equal(name, f.name) {
				v = value
				return false
			}
			return true
		})
		if bytes.IndexByte(v, '\\') >= 0 {
			s := len(w.scratch)
			w.scratch = parse.AppendSDUnescape(w.scratch, v)
			v = w.scratch[s:len(w.scratch):len(w.scratch)]
		}
		return v
	case fkHost:
		return e.ev.Host
	case fkApp:
		return e.ev.App
	case fkProcID:
		return e.ev.ProcID
	case fkMsgID:
		return e.ev.MsgID
	case fkTLSClient:
		return w.client
	case fkMessage:
		if e.kind == Syslog {
			return e.ev.Message
		}
		return e.line
	case fkRule:
		return w.ruleValue(i, e, f)
	}
	return nil
}

// jsonValue returns a JSON member's value as key bytes: strings unquoted,
// numbers and booleans as text; objects, arrays and null give nil.
func (w *Worker) jsonValue(body, path []byte) []byte {
	v, kind, ok := parse.JSONField(body, path)
	if !ok {
		return nil
	}
	switch kind {
	case parse.KindString, parse.KindNumber, parse.KindBool:
		return v
	case parse.KindEscaped:
		s := len(w.scratch)
		w.scratch = parse.AppendUnquote(w.scratch, v)
		return w.scratch[s:len(w.scratch):len(w.scratch)]
	}
	return nil
}
