package enrichd

import (
	"strings"

	"github.com/lutkit/lutkit/internal/config"
)

// checkRuleFields checks that what each rule reads is written by an
// earlier stage: an input's parser (json.PATH by a json input; sd.ID.NAME
// and the syslog header fields by a syslog input). Rules read the event
// as it was received, so a field under another rule's target is never
// set when the rule runs. A configuration without inputs (a lookup
// server) has nothing to check.
func (cfg *Config) checkRuleFields(s config.Scope) {
	if len(cfg.Inputs) == 0 {
		return
	}
	formats := map[Format]bool{}
	for _, in := range cfg.Inputs {
		formats[in.Format] = true
	}
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		rs := s.In(&r.At, config.Index("rules", i))
		for _, f := range r.Fields {
			if need := fieldFormat(f); need != "" && !formats[need] {
				rs.Errorf("field", "%q is only set by a %s input, and no input reads %s", f, need, need)
			}
			for j := range cfg.Rules {
				o := &cfg.Rules[j]
				if t := o.Target; j != i && t != "" && (f == t || strings.HasPrefix(f, t+".")) {
					rs.Errorf("field", "%q is under the target of rule %q (%s): rules read the event as received, not what another rule writes", f, o.Name, t)
				}
			}
		}
	}
}

// fieldFormat is the input format that sets the event field f ("" when
// any does).
func fieldFormat(f string) Format {
	switch {
	case strings.HasPrefix(f, "json."):
		return FormatJSON
	case strings.HasPrefix(f, "sd."):
		return FormatSyslog
	}
	switch f {
	case "host.name", "host", "log.syslog.appname", "appname", "process.pid", "log.syslog.procid", "log.syslog.msgid":
		return FormatSyslog
	}
	return ""
}
