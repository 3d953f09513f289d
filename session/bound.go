package session

import (
	"time"

	"chat/engine"
	"chat/models/plan"
)

// The panel's "decode bound": a decode step cannot be faster than reading
// every weight and the cache once at the machine's read bandwidth (or doing
// its FLOPs at peak), models/plan's roofline with the probe of this machine.
// The probe is read from its cache or, the first time, measured in the
// background (about a second) when Options.Probe is set.

// startProbe makes the machine, as this model's size meets it
// (Machine.ForWeights), known to decodeBound soon.
func (s *Session) startProbe() {
	if !s.opts.Probe {
		return
	}
	weights := s.model.Info().WeightBytes
	go func() {
		if p, err := plan.Measure(false); err == nil {
			mc := p.Machine.ForWeights(weights)
			s.machine.Store(&mc)
		}
	}()
}

// decodeBound is the roofline time of the next decode step of the reply
// whose stats e are, or 0 while the machine is not known.
func (s *Session) decodeBound(e engine.Stats) time.Duration {
	mc := s.machine.Load()
	if mc == nil || e.BlockSize <= 0 {
		return 0
	}
	info := s.model.Info()
	md := plan.Model{Params: info.Params, WeightBytes: info.WeightBytes,
		KVPerToken: e.BlockBytes / int64(e.BlockSize), Context: info.ContextLength, Arith: info.Arith}
	return plan.Decode(*mc, md, 1, e.KVUsed).Bound
}
