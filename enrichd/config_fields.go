package enrichd

import (
	"strings"

	"github.com/lutkit/lutkit/enrichd/engine"

	"github.com/lutkit/lutkit/internal/config"
)

// checkRuleFields checks that what each rule reads is written by an
// earlier stage: an input's parser (json.PATH by a json input; sd.ID.NAME
// and the syslog header fields by a syslog input) or an earlier rule (a
// field under its target, which it writes: chained rules). A field under
// a later rule's target is not written yet when the rule runs. A
// configuration without inputs (a lookup server) has no event fields to
// check.
func (cfg *Config) checkRuleFields(s config.Scope) {
	rules := make([]engine.Rule, len(cfg.Rules))
	for i := range cfg.Rules {
		rules[i] = cfg.Rules[i].Rule
	}
	formats := map[Format]bool{}
	for _, in := range cfg.Inputs {
		formats[in.Format] = true
	}
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		rs := s.In(&r.At, config.Index("rules", i))
		for _, f := range r.Fields {
			if err := engine.CheckRuleField(rules, i, f); err != nil {
				rs.Errorf("field", "%v", err)
				continue
			}
			if need := fieldFormat(f); need != "" && len(cfg.Inputs) > 0 && !formats[need] {
				rs.Errorf("field", "%q is only set by a %s input, and no input reads %s", f, need, need)
			}
		}
		when, each := engine.CheckRule(rules, i)
		rs.Check("when", when)
		rs.Check("each", each)
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
