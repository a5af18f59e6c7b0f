package enrichd

import (
	"errors"
	"fmt"
)

// outputSwap is a reload's request to the output loop: switch to outputs
// (configured by cfgs) between two buffers. keep[i] is the index in
// outputs of the live output i when it stays, or -1 when it goes.
type outputSwap struct {
	outputs []Output
	cfgs    []OutputConfig
	keep    []int
	done    chan error
}

// holds is how many buffers o keeps after Write (holder), or 0.
func holds(o Output) int {
	if h, ok := o.(holder); ok {
		return h.Holds()
	}
	return 0
}

// reloadOutputs switches the daemon to the outputs of cfgs, when they
// differ from the live ones: the outputs whose configuration is the same
// (name and settings) are kept as they are (their files and connections
// stay open); the others are opened first, and one that fails refuses the
// reload with the live outputs left running. The output loop then
// flushes every live output, closes those that go and switches between
// two buffers (swapOutputs): each buffer goes wholly to the old outputs
// or wholly to the new. It returns how many outputs were opened and
// closed.
func (d *Daemon) reloadOutputs(cfgs []OutputConfig) (opened, closed int, err error) {
	d.outMu.RLock()
	live := append([]OutputConfig(nil), d.outCfgs...)
	liveOut := append([]Output(nil), d.outputs...)
	d.outMu.RUnlock()
	if sameValue(live, cfgs) {
		return 0, 0, nil
	}
	if d.queue != nil {
		return 0, 0, errors.New("outputs changed while the persistent queue (queue:) is on: the queue tracks delivery per output, so its outputs change only at a restart")
	}
	sw := &outputSwap{keep: make([]int, len(live)), done: make(chan error, 1)}
	for i := range sw.keep {
		sw.keep[i] = -1
	}
	fail := func(err error) (int, int, error) {
		for i, o := range sw.outputs {
			if !kept(sw.keep, i) {
				if cerr := o.Close(); cerr != nil {
					d.log.Warn("closing an output the refused reload opened", "output", sw.cfgs[i].Name, "err", cerr)
				}
			}
		}
		return 0, 0, err
	}
	nholds := 0
	for i := range cfgs {
		oc := &cfgs[i]
		var o Output
		for j := range live {
			if sw.keep[j] < 0 && sameValue(live[j], *oc) {
				o, sw.keep[j] = liveOut[j], i
				break
			}
		}
		if o == nil {
			if o, err = outputKinds[oc.Type].New(oc, d.env(oc.Name, string(oc.Type), "output")); err != nil {
				return fail(fmt.Errorf("output %s: %w", oc.Name, err))
			}
			opened++
		}
		sw.outputs = append(sw.outputs, o)
		sw.cfgs = append(sw.cfgs, *oc)
		nholds += holds(o)
	}
	if nholds > d.outHolds {
		return fail(fmt.Errorf("outputs changed to hold %d buffers in flight where the running ones were given %d: more needs a restart", nholds, d.outHolds))
	}
	select {
	case d.outSwap <- sw:
	case <-d.outDone:
		return fail(errors.New("the daemon is shutting down"))
	}
	if err := <-sw.done; err != nil {
		return fail(err)
	}
	for _, k := range sw.keep {
		if k < 0 {
			closed++
		}
	}
	return opened, closed, nil
}

// kept reports whether output i of a swap is a live output kept.
func kept(keep []int, i int) bool {
	for _, k := range keep {
		if k == i {
			return true
		}
	}
	return false
}

// swapOutputs, in the output loop, flushes every live output (one that
// fails refuses the swap: it keeps what it holds and the live outputs go
// on), closes those sw does not keep, carries their counters over to the
// new output of the same name, then makes sw's outputs live.
func (d *Daemon) swapOutputs(sw *outputSwap) error {
	for i, o := range d.outputs {
		if err := o.Flush(); err != nil {
			o.Stats().failed(err)
			return fmt.Errorf("output %s did not flush (%w): the running outputs stay until it delivers", d.outCfgs[i].Name, err)
		}
	}
	for i, o := range d.outputs {
		if sw.keep[i] >= 0 {
			continue
		}
		if err := o.Close(); err != nil {
			d.log.Error("closing output", "output", d.outCfgs[i].Name, "err", err)
		}
		for j, c := range sw.cfgs {
			if c.Name == d.outCfgs[i].Name && c.Type == d.outCfgs[i].Type && !kept(sw.keep, j) {
				sw.outputs[j].Stats().carry(o.Stats())
				break
			}
		}
	}
	d.outMu.Lock()
	d.outputs, d.outCfgs = sw.outputs, sw.cfgs
	d.outMu.Unlock()
	return nil
}

// carry adds the counters of old, an output a reload replaced, to st, its
// successor of the same name, so that they go on counting.
func (st *OutputStats) carry(old *OutputStats) {
	st.Bytes.Add(old.Bytes.Load())
	st.Delivered.Add(old.Delivered.Load())
	st.Errors.Add(old.Errors.Load())
	for i := range st.failures {
		st.failures[i].Add(old.failures[i].Load())
	}
}
