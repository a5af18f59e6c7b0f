package enrichd

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// inputPlan is what a reload does to the inputs: the inputs that will be
// live (kept or made by the reload), and the live ones it stops.
type inputPlan struct {
	inputs []Input
	kinds  []*InputKind
	cfgs   []InputConfig
	fresh  []bool // inputs[i] was made by the reload (started at commit)
	// retire are the live inputs the reload stops at commit (removed, or
	// replaced by an input bound to another address).
	retire []liveInput
	// rebound are the live inputs already stopped and closed because
	// their replacement listens on the same address; undo starts them
	// again from their configuration.
	rebound []liveInput
}

// liveInput is one of the daemon's inputs, with its kind and
// configuration.
type liveInput struct {
	in   Input
	kind *InputKind
	cfg  InputConfig
}

// liveInputs returns the daemon's inputs.
func (d *Daemon) liveInputs() []liveInput {
	d.inMu.RLock()
	defer d.inMu.RUnlock()
	out := make([]liveInput, len(d.inputs))
	for i := range d.inputs {
		out[i] = liveInput{d.inputs[i], d.inputKinds[i], d.inCfgs[i]}
	}
	return out
}

// prepareInputs makes the inputs of cfgs that differ from the live ones,
// binding their listeners, without starting them: an input whose
// configuration is the same (name and every setting) is kept as it runs,
// with its listener and connections. A live input that cfgs no longer has,
// or has with other settings, is retired at commit. An input made on the
// address a live one it replaces listens on (the address cannot be bound
// twice) is made after that one is stopped, drained and closed; if it
// cannot be made, the old one is made again and started.
//
// Any input that cannot be made refuses the reload: those made are
// closed, and the live inputs go on (those stopped for their address
// started again). It returns nil when the inputs did not change.
func (d *Daemon) prepareInputs(cfgs []InputConfig) (*inputPlan, error) {
	live := d.liveInputs()
	liveCfgs := make([]InputConfig, len(live))
	for i, l := range live {
		liveCfgs[i] = l.cfg
	}
	if sameValue(liveCfgs, cfgs) {
		return nil, nil
	}
	if d.cfg.Pipeline.Delivery == ExactlyOnce {
		return nil, errors.New("inputs changed with pipeline.delivery: exactly_once: the output's transaction holds the input's offsets, so the input changes only at a restart")
	}
	if d.finite() {
		return nil, errors.New("inputs changed where every input is a file: the daemon ends when they do, so its inputs change only at a restart")
	}
	p := &inputPlan{}
	keep := make([]bool, len(live))
	for i := range cfgs {
		ic := &cfgs[i]
		kind := inputKinds[ic.Type]
		p.cfgs = append(p.cfgs, *ic)
		p.kinds = append(p.kinds, kind)
		var in Input
		for j := range live {
			if !keep[j] && sameValue(live[j].cfg, *ic) {
				in, keep[j] = live[j].in, true
				break
			}
		}
		p.inputs = append(p.inputs, in)
		p.fresh = append(p.fresh, in == nil)
	}
	for j, l := range live {
		if !keep[j] && l.kind.Finite {
			return nil, fmt.Errorf("input %s (%s) removed or changed: a file input is read to its end once, so it changes only at a restart", l.cfg.Name, l.cfg.Type)
		}
	}
	for i, fresh := range p.fresh {
		if fresh && p.kinds[i].Finite {
			return nil, fmt.Errorf("input %s (%s) added: a file input is read to its end once, so it is added only at a restart", p.cfgs[i].Name, p.cfgs[i].Type)
		}
	}
	// Inputs on addresses of their own first: binding them changes
	// nothing that runs.
	var same []int
	for i, fresh := range p.fresh {
		if !fresh {
			continue
		}
		if j := sameAddress(live, keep, p.cfgs[i].Listen); j >= 0 {
			same = append(same, i)
			continue
		}
		in, err := p.kinds[i].New(&p.cfgs[i], d.env(p.cfgs[i].Name, string(p.cfgs[i].Type), "input"))
		if err != nil {
			p.undo(d)
			return nil, fmt.Errorf("input %s: %w", p.cfgs[i].Name, err)
		}
		p.inputs[i] = in
	}
	for j := range live {
		if !keep[j] && !p.reboundAt(live, j, same) {
			p.retire = append(p.retire, live[j])
		}
	}
	for _, i := range same {
		j := sameAddress(live, keep, p.cfgs[i].Listen)
		keep[j] = true // taken: another input of cfgs on the address is refused by its bind
		d.retireInput(live[j])
		p.rebound = append(p.rebound, live[j])
		in, err := p.kinds[i].New(&p.cfgs[i], d.env(p.cfgs[i].Name, string(p.cfgs[i].Type), "input"))
		if err != nil {
			p.undo(d)
			return nil, fmt.Errorf("input %s: %w (input %s, stopped to free the address, started again)", p.cfgs[i].Name, err, live[j].cfg.Name)
		}
		p.inputs[i] = in
	}
	return p, nil
}

// reboundAt reports whether live input j is replaced by one of the new
// inputs same on its address.
func (p *inputPlan) reboundAt(live []liveInput, j int, same []int) bool {
	for _, i := range same {
		if p.cfgs[i].Listen == live[j].cfg.Listen {
			return true
		}
	}
	return false
}

// sameAddress returns the index of the live input, not kept, that listens
// on addr (a fixed port), or -1.
func sameAddress(live []liveInput, keep []bool, addr string) int {
	if addr == "" {
		return -1
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return -1
	}
	for j, l := range live {
		if !keep[j] && l.cfg.Listen == addr {
			return j
		}
	}
	return -1
}

// undo closes the inputs the plan made (none was started) and starts again
// the live inputs it stopped for their address, from their configuration:
// the reload is refused.
func (p *inputPlan) undo(d *Daemon) {
	for i, in := range p.inputs {
		if p.fresh[i] && in != nil {
			if err := in.Close(); err != nil {
				d.log.Warn("closing an input the refused reload made", "input", p.cfgs[i].Name, "err", err)
			}
			p.inputs[i] = nil
		}
	}
	for _, l := range p.rebound {
		in, err := l.kind.New(&l.cfg, d.env(l.cfg.Name, string(l.cfg.Type), "input"))
		if err != nil {
			d.log.Error("an input stopped by the refused reload cannot start again; it is gone until a reload or a restart", "input", l.cfg.Name, "err", err)
			d.dropInput(l.in)
			continue
		}
		in.Stats().carry(l.in.Stats())
		d.replaceInput(l.in, in)
		in.Start()
	}
	p.rebound = nil
}

// replaceInput puts in where old is in the live inputs.
func (d *Daemon) replaceInput(old, in Input) {
	d.inMu.Lock()
	defer d.inMu.Unlock()
	for i, x := range d.inputs {
		if x == old {
			d.inputs[i] = in
		}
	}
}

// dropInput removes old from the live inputs.
func (d *Daemon) dropInput(old Input) {
	d.inMu.Lock()
	defer d.inMu.Unlock()
	for i, x := range d.inputs {
		if x == old {
			d.inputs = append(d.inputs[:i:i], d.inputs[i+1:]...)
			d.inputKinds = append(d.inputKinds[:i:i], d.inputKinds[i+1:]...)
			d.inCfgs = append(d.inCfgs[:i:i], d.inCfgs[i+1:]...)
			return
		}
	}
}

// commitInputs makes the plan's inputs live: it starts those the reload
// made, then stops the inputs it retires as the shutdown does (see
// retireInput). It returns how many inputs it started and stopped.
func (d *Daemon) commitInputs(p *inputPlan) (started, stopped int) {
	if p == nil {
		return 0, 0
	}
	d.inMu.Lock()
	d.inputs, d.inputKinds, d.inCfgs = p.inputs, p.kinds, p.cfgs
	d.inMu.Unlock()
	for i, in := range p.inputs {
		if p.fresh[i] {
			in.Start()
			started++
		}
	}
	for _, l := range p.retire {
		d.retireInput(l)
	}
	for _, l := range append(p.retire, p.rebound...) {
		for i, in := range p.inputs {
			if p.fresh[i] && p.cfgs[i].Name == l.cfg.Name && p.cfgs[i].Type == l.cfg.Type {
				in.Stats().carry(l.in.Stats())
				break
			}
		}
	}
	return started, len(p.retire) + len(p.rebound)
}

// retireInput stops a live input the way the shutdown drains one: it
// accepts nothing new and reads for drain_read_grace what was already
// sent; once it is done, every batch it read is with the workers. It is
// closed when the outputs have delivered them (its inflight count back to
// zero: a Kafka input then commits them all), or at shutdown_timeout.
func (d *Daemon) retireInput(l liveInput) {
	in := l.in
	in.Stop(time.Now().Add(d.cfg.DrainReadGrace))
	giveUp := time.NewTimer(d.cfg.ShutdownTimeout)
	defer giveUp.Stop()
	select {
	case <-in.Done():
	case <-giveUp.C:
		d.log.Error("an input a reload removed did not stop reading within shutdown_timeout; closing it", "input", l.cfg.Name)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
wait:
	for in.Stats().inflight.Load() > 0 {
		select {
		case <-tick.C:
		case <-giveUp.C:
			d.log.Error("the events of an input a reload removed were not all delivered within shutdown_timeout; closing it", "input", l.cfg.Name,
				"batches", in.Stats().inflight.Load())
			break wait
		case <-d.hardStop:
			break wait
		}
	}
	if err := in.Close(); err != nil {
		d.log.Warn("closing an input a reload removed", "input", l.cfg.Name, "err", err)
	}
}

// carry adds the counters of old, an input a reload replaced, to st, its
// successor of the same name.
func (st *InputStats) carry(old *InputStats) {
	st.Events.Add(old.Events.Load())
	st.Bytes.Add(old.Bytes.Load())
	st.Malformed.Add(old.Malformed.Load())
	st.Truncated.Add(old.Truncated.Load())
	st.Dropped.Add(old.Dropped.Load())
	st.TooLarge.Add(old.TooLarge.Load())
	st.FrameErrors.Add(old.FrameErrors.Load())
}
