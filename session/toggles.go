package session

import (
	"errors"
	"fmt"
	"path/filepath"

	"chat/engine"
	"chat/engine/bench"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/kvcache"
	"chat/models/weights"
)

// Weight formats, the draft model and the model itself switch between
// replies without losing the conversation. A new weight format or model means
// new KV entries: the engine is replaced, so the next turn prefills the whole
// conversation again (the notice says so).

// Quant is the current weight format ("f32", "int8", ...).
func (s *Session) Quant() string {
	if s.remote != nil {
		return "" // the server's business
	}
	return s.model.Info().Quant
}

// open loads a model file through Options.Open.
func (s *Session) open(path string) (models.Model, error) {
	if s.opts.Open == nil {
		return nil, errors.New("this session cannot load model files")
	}
	return s.opts.Open(path)
}

// SetQuant switches the weights to format. From float weights it quantizes
// in memory and drops the float linears; back to "f32" (or to another format)
// it reloads the float weights first.
func (s *Session) SetQuant(format string) error {
	if s.remote != nil {
		return errRemote
	}
	if s.reply != nil {
		return ErrBusy
	}
	cur := s.model.Info().Quant
	if format == cur {
		return nil
	}
	if q := s.fileQuant; q != "f32" && q != "f16" && q != "bf16" {
		// Said at once: reloading the file first took seconds on a 1B model.
		return fmt.Errorf("%s is %s in its file: another weight format is made from a float file (f32, f16, bf16), as llama-quantize makes it", s.model.Info().Name, q)
	}
	base := s.model
	if cur != "f32" {
		if s.opts.Open == nil {
			return fmt.Errorf("cannot go back from %s: the float weights are not available", cur)
		}
		m, err := s.open(s.opts.ModelPath)
		if err != nil {
			return err
		}
		if base, err = s.withLora(m); err != nil {
			return err
		}
	}
	next := base
	if format != "f32" {
		m, err := quantize(base, format, s.vals.Calib)
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

// SetKVQuant is /set kv_quant_k and kv_quant_v: a new cache stores keys as
// k and values as v ("auto", "f32", "f16", "int8", "fp8", "int4"); the
// conversation's cached positions go with the old one, so the next turn
// re-prefills it.
func (s *Session) SetKVQuant(k, v string) error {
	if s.remote != nil {
		return errRemote
	}
	if s.reply != nil {
		return ErrBusy
	}
	s.vals.KVQuantK, s.vals.KVQuantV = k, v
	s.swapModel(s.model)
	kf, _ := kvcache.FormatFor(k, s.model.Info()) // the engine took them: valid
	vf, _ := kvcache.FormatFor(v, s.model.Info())
	s.notices = append(s.notices, fmt.Sprintf("KV cache now keys %s, values %s; the next turn re-prefills the conversation", kf, vf))
	return nil
}

// quantize re-encodes m in format; a calibrated format (GPTQ, AWQ) learns
// from the activations of the text in file calib, or without one of the
// shared TinyStories text.
func quantize(m models.Model, format, calib string) (models.Model, error) {
	if !weights.Calibrated(format) {
		q, ok := m.(models.Quantizer)
		if !ok {
			return nil, fmt.Errorf("%s (%s) cannot be quantized in memory", m.Info().Name, m.Info().Quant)
		}
		return q.Quantize(format)
	}
	c, ok := m.(models.CalibQuantizer)
	if !ok {
		return nil, fmt.Errorf("%s (%s) cannot be calibrated in memory", m.Info().Name, m.Info().Quant)
	}
	text, err := bench.NeedText(calib, "--calib")
	if err != nil {
		return nil, fmt.Errorf("%s is calibrated on a text: %w", format, err)
	}
	return c.QuantizeCalib(format, text)
}

// swapModel replaces the model and its engine, keeping the sampler and
// speculation settings. The old engine's KV cache goes with it.
func (s *Session) swapModel(m models.Model) {
	s.eng.Close()
	s.model = m
	s.eng = engine.NewWithOptions(m, engineOptions(s.vals))
	s.reprefill = true
	s.eng.SetSampler(s.samplerParams())
	if err := s.setSpec(s.vals.Spec, s.vals.DraftK); err != nil {
		s.notices = append(s.notices, "speculation turned off: "+err.Error())
		s.vals.Spec = "off"
	}
}

// SetModel is /model FILE: the conversation continues with another model
// (its own chat template; the mode stays). The next turn prefills it all.
func (s *Session) SetModel(path string) error {
	if s.remote != nil {
		return errRemote
	}
	if s.reply != nil {
		return ErrBusy
	}
	m, err := s.open(path)
	if err != nil {
		return err
	}
	if len(s.adapters) > 0 {
		if am, err := s.withLora(m); err != nil {
			s.notices = append(s.notices, "LoRA adapters dropped: "+err.Error())
			s.adapters = nil
		} else {
			m = am
		}
	}
	fileQuant := m.Info().Quant
	if q := s.vals.Quant; q != "" && q != "f32" && q != m.Info().Quant {
		if _, ok := m.(models.Quantizer); ok {
			if m, err = quantize(m, q, s.vals.Calib); err != nil {
				return err
			}
		}
	}
	s.opts.ModelPath, s.opts.ModelIdentity, s.saved.identity, s.fileQuant = path, "", "", fileQuant
	s.swapModel(m)
	s.tmpl = TemplateFor(m)
	if err := s.tmpl.Err(); err != nil {
		s.notices = append(s.notices, "the model's chat template failed ("+err.Error()+"); using the built-in "+s.tmpl.Name()+" format")
	}
	return nil
}

// SetDraft is /draft FILE: speculative decoding with this draft model from
// the next reply; "" turns it off and lets the draft model go.
func (s *Session) SetDraft(path string) error {
	if s.remote != nil {
		return errRemote
	}
	if s.reply != nil {
		return ErrBusy
	}
	if path == "" {
		if err := s.setSpec("off", s.vals.DraftK); err != nil {
			return err
		}
		s.draft, s.opts.DraftPath = nil, ""
		return nil
	}
	d, err := s.open(path)
	if err != nil {
		return fmt.Errorf("draft model: %w", err)
	}
	old := s.draft
	s.draft = d
	if err := s.setSpec("draft", s.vals.DraftK); err != nil {
		s.draft = old
		return fmt.Errorf("draft model %s: %w", filepath.Base(path), err)
	}
	s.opts.DraftPath = path
	return nil
}

// DraftName is the draft model's name, "" when there is none.
func (s *Session) DraftName() string {
	if s.draft == nil {
		return ""
	}
	return s.draft.Info().Name
}

// Status tells the UI what is going on besides generating, in a few words
// (it is the panel's state): after a weight or model switch, the next turn
// prefills the whole conversation again.
func (s *Session) Status() string {
	if !s.reprefill {
		return ""
	}
	if s.reply != nil {
		return "re-prefilling (" + s.Quant() + ")"
	}
	return "re-prefill pending"
}

// specStats are the speculation counters of a reply.
func specStats(e engine.Stats) SpecStats {
	sp := e.Spec
	st := SpecStats{Method: sp.Method.String(), K: sp.K, KNow: sp.KNow, Note: sp.Note, Acceptance: sp.AcceptanceRate(),
		MeanAccepted: sp.MeanAccepted(), TokensPerPass: sp.TokensPerPass()}
	if sp.Method != speculative.Off {
		for i := 0; i < sp.K && i < len(sp.PosProposed); i++ {
			st.PerPosition[i] = sp.PosRate(i)
		}
	}
	return st
}
