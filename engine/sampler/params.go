package sampler

import (
	"fmt"
	"math"
)

// Params are the sampler knobs. The zero value is plain sampling at
// temperature 0 (which, as in the course, divides by 1e-6 rather than being
// greedy); use Defaults for the course's chat defaults.
type Params struct {
	Greedy      bool    // argmax of the (penalised) logits; temperature, top-k/p, min-p and the seed are ignored
	Temperature float64 // logits are divided by max(T, 1e-6) when T != 1
	TopK        int     // keep logits >= the k-th largest (ties kept); 0 = off
	TopP        float64 // nucleus; off unless 0 < p < 1
	MinP        float64 // drop probs < m * max prob; off unless 0 < m < 1

	RepeatPenalty    float64 // llama.cpp-style: divide positive / multiply negative logits of seen ids; 0 or 1 = off
	FrequencyPenalty float64 // subtract f * count(id) over the penalty window; 0 = off
	PresencePenalty  float64 // subtract p if id was seen in the penalty window; 0 = off
	PenaltyWindow    int     // last N ids the penalties look at; 0 = 64

	// DRY ("don't repeat yourself", dry.go): an id that would extend a
	// repeat of at least DRYAllowedLength ids loses
	// DRYMultiplier × DRYBase^(length − DRYAllowedLength) from its logit.
	DRYMultiplier    float64 // 0 = off
	DRYBase          float64 // off below 1
	DRYAllowedLength int
	DRYPenaltyLastN  int    // the last N ids it looks at; -1 = all, 0 = off
	DRYBreakers      string // sequence breakers, each ended by a NUL (JoinBreakers); a repeat never spans one

	TopNSigma      float64 // keep logits >= max − n·σ; off unless > 0
	TypicalP       float64 // locally typical sampling; off unless 0 < p < 1
	XTCProbability float64 // chance per token that XTC acts; 0 = off
	XTCThreshold   float64 // XTC drops every id with prob >= this but the least likely of them; off above 0.5

	// Mirostat 1 or 2 replaces top-nσ ... XTC by truncation at a target
	// surprise (MirostatTau bits, learning rate MirostatEta); 0 = off.
	Mirostat    int
	MirostatTau float64
	MirostatEta float64

	Seed uint64 // the RNG seed; the same seed, model and prompt give the same text
}

// Defaults are the course chat.py defaults: T 0.8, top-p 0.95.
func Defaults() Params {
	return Params{Temperature: 0.8, TopP: 0.95, Seed: 1}
}

// Validate reports knobs that cannot mean anything: NaN or infinite values
// and negative counts. Out-of-range p values (TopP >= 1, MinP <= 0...) are
// not errors: they switch the filter off, as in the course.
func (p Params) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"temperature", p.Temperature}, {"top-p", p.TopP}, {"min-p", p.MinP},
		{"repeat penalty", p.RepeatPenalty}, {"frequency penalty", p.FrequencyPenalty},
		{"presence penalty", p.PresencePenalty}, {"DRY multiplier", p.DRYMultiplier}, {"DRY base", p.DRYBase},
		{"top-n-sigma", p.TopNSigma}, {"typical-p", p.TypicalP}, {"XTC probability", p.XTCProbability},
		{"XTC threshold", p.XTCThreshold}, {"mirostat tau", p.MirostatTau}, {"mirostat eta", p.MirostatEta},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("sampler: %s is %v", f.name, f.v)
		}
	}
	switch {
	case p.TopK < 0:
		return fmt.Errorf("sampler: top-k %d is negative", p.TopK)
	case p.PenaltyWindow < 0:
		return fmt.Errorf("sampler: penalty window %d is negative", p.PenaltyWindow)
	case p.RepeatPenalty < 0:
		return fmt.Errorf("sampler: repeat penalty %v is negative", p.RepeatPenalty)
	case p.DRYAllowedLength < 0:
		return fmt.Errorf("sampler: DRY allowed length %d is negative", p.DRYAllowedLength)
	case p.DRYPenaltyLastN < -1:
		return fmt.Errorf("sampler: DRY penalty window %d is below -1", p.DRYPenaltyLastN)
	case p.Mirostat < 0 || p.Mirostat > 2:
		return fmt.Errorf("sampler: mirostat %d is not 0, 1 or 2", p.Mirostat)
	}
	return nil
}
