package session

import (
	"fmt"

	"chat/engine"
	"chat/engine/speculative"
	"chat/models"
)

// Weight formats and speculative decoding switch between replies without
// losing the conversation. A new weight format means new KV entries: the
// engine is replaced, so the next turn prefills the whole conversation again
// (the notice says so).

// Quant is the current weight format ("f32", "int8", ...).
func (s *Session) Quant() string { return s.model.Info().Quant }

// SetQuant switches the weights to format. From float weights it quantizes
// in memory and drops the float linears; back to "f32" (or to another format)
// it reloads the float weights first.
func (s *Session) SetQuant(format string) error {
	if s.reply != nil {
		return ErrBusy
	}
	cur := s.model.Info().Quant
	if format == cur {
		return nil
	}
	base := s.model
	if cur != "f32" {
		if s.opts.Reload == nil {
			return fmt.Errorf("cannot go back from %s: the float weights are not available", cur)
		}
		m, err := s.opts.Reload()
		if err != nil {
			return err
		}
		base = m
	}
	next := base
	if format != "f32" {
		q, ok := base.(models.Quantizer)
		if !ok {
			return fmt.Errorf("%s (%s) cannot be quantized in memory", base.Info().Name, base.Info().Quant)
		}
		m, err := q.Quantize(format)
		if err != nil {
			return err
		}
		next = m
	}
	s.swapModel(next)
	info := next.Info()
	s.notices = append(s.notices, fmt.Sprintf("weights now %s (%.1f MB read per token); the next turn re-prefills the conversation", info.Quant, float64(info.WeightBytes)/1e6))
	return nil
}

// swapModel replaces the model and its engine, keeping the sampler and
// speculation settings. The old engine's KV cache goes with it.
func (s *Session) swapModel(m models.Model) {
	spec := s.eng.Speculation()
	s.eng.Close()
	s.model = m
	s.eng = engine.NewWithOptions(m, s.opts.Engine)
	s.reprefill = true
	s.eng.SetSampler(s.opts.Sampler)
	if spec.Method != speculative.Off {
		if err := s.eng.SetSpeculation(spec); err != nil {
			s.notices = append(s.notices, "speculation turned off: "+err.Error())
		}
	}
}

// Speculation is the current speculative decoding setting.
func (s *Session) Speculation() speculative.Config { return s.eng.Speculation() }

// SetSpeculation turns speculative decoding off or to a draft model, n-gram
// or prompt lookup, from the next reply on. Switching to Draft without a
// draft model reuses the one given before.
func (s *Session) SetSpeculation(c speculative.Config) error {
	if c.Method == speculative.Draft && c.Draft == nil {
		c.Draft = s.opts.Speculation.Draft
		if c.Draft == nil {
			return fmt.Errorf("no draft model: start with --draft FILE")
		}
	}
	if err := s.eng.SetSpeculation(c); err != nil {
		return err
	}
	if c.Draft != nil {
		s.opts.Speculation.Draft = c.Draft
	}
	return nil
}

// Status tells the UI what is going on besides generating: after a weight
// switch, the next turn prefills the whole conversation again.
func (s *Session) Status() string {
	if !s.reprefill {
		return ""
	}
	if s.reply != nil {
		return "re-prefilling the conversation for the " + s.Quant() + " weights"
	}
	return "weights now " + s.Quant() + ": the next turn re-prefills the conversation"
}
