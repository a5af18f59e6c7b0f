package enrichd

import (
	"slices"
	"strings"

	"github.com/lutkit/lutkit/internal/config"
)

// checkDelivery has the settings of the inputs and outputs check what
// the pipeline's delivery allows (DeliveryChecker).
func (cfg *Config) checkDelivery(s config.Scope) {
	for i := range cfg.Inputs {
		if dc, ok := cfg.Inputs[i].Settings.(DeliveryChecker); ok {
			dc.CheckDelivery(s.In(&cfg.Inputs[i].At, config.Index("inputs", i)), cfg.Pipeline.Delivery)
		}
	}
	for i := range cfg.Outputs {
		if dc, ok := cfg.Outputs[i].Settings.(DeliveryChecker); ok {
			dc.CheckDelivery(s.In(&cfg.Outputs[i].At, config.Index("outputs", i)), cfg.Pipeline.Delivery)
		}
	}
}

// checkExactlyOnce checks a pipeline with delivery: exactly_once: one
// input and one output, of types that support it (a transaction holds
// the output's events and the input's offsets together).
func (cfg *Config) checkExactlyOnce(s config.Scope) {
	ps := s.In(&cfg.Pipeline.At, "pipeline")
	var ins, outs []string
	for t, k := range inputKinds {
		if k.ExactlyOnce {
			ins = append(ins, string(t))
		}
	}
	for t, k := range outputKinds {
		if k.ExactlyOnce {
			outs = append(outs, string(t))
		}
	}
	slices.Sort(ins)
	slices.Sort(outs)
	if cfg.Queue.Enabled() {
		// The queue acknowledges the input once events are on its disk,
		// outside the transaction that would hold them with the offsets.
		s.In(&cfg.Queue.At, "queue").Errorf("type", "a persistent queue cannot be used with pipeline.delivery: exactly_once (the transaction holds the events until the output topic has them)")
	}
	if len(cfg.Inputs) != 1 || len(cfg.Outputs) != 1 {
		ps.Errorf("delivery", "exactly_once needs one input and one output (%d inputs and %d outputs here): one transaction holds the output's events and the input's offsets", len(cfg.Inputs), len(cfg.Outputs))
	}
	for i := range cfg.Inputs {
		in := &cfg.Inputs[i]
		is := s.In(&in.At, config.Index("inputs", i))
		if k := inputKinds[in.Type]; k != nil && !k.ExactlyOnce {
			is.Errorf("type", "a %s input cannot take part in pipeline.delivery: exactly_once (only %s)", in.Type, strings.Join(ins, ", "))
		}
	}
	for i := range cfg.Outputs {
		o := &cfg.Outputs[i]
		outScope := s.In(&o.At, config.Index("outputs", i))
		if k := outputKinds[o.Type]; k != nil && !k.ExactlyOnce {
			outScope.Errorf("type", "a %s output cannot take part in pipeline.delivery: exactly_once (only %s)", o.Type, strings.Join(outs, ", "))
		}
	}
}
