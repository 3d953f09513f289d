package sampler

import "math"

// Trace is what one Sample or Dist call did, stage by stage: which
// processors the knobs left on and how many ids each left standing. The
// next-token view and --trace show it, so it is counted by the processors'
// own pipeline rather than worked out again elsewhere.
type Trace struct {
	Vocab   int
	Applied [NumStages]bool // indexed by Stage*: the processors that ran
	// Left is the number of ids still possible after each applied stage:
	// finite logits before the softmax, non-zero probabilities from
	// mirostat and typical on (an id whose exp underflows to 0 cannot be
	// drawn either); 1 after greedy and draw.
	Left [NumStages]int
}

// SetTrace makes the following Sample and Dist calls record into t (nil:
// stop recording). Counting costs a pass over the vocabulary per stage, so
// it is meant for the calls someone is watching.
func (s *Sampler) SetTrace(t *Trace) { s.trace = t }

// begin starts a traced call after load: the mask is the first stage.
func (s *Sampler) begin() {
	t := s.trace
	if t == nil {
		return
	}
	*t = Trace{Vocab: s.vocab}
	s.note(StageMask, s.mask != nil)
}

// note records stage as applied (or not) and counts what it left.
func (s *Sampler) note(stage int, on bool) {
	t := s.trace
	if t == nil || !on {
		return
	}
	t.Applied[stage] = true
	n := 0
	switch stage {
	case StageGreedy, StageDraw:
		n = 1
	case StageMirostat, StageTypical, StageTopP, StageMinP, StageXTC, StageSoftmax:
		// The candidates' exps (probabilities after the softmax): an id
		// whose probability underflows to 0 is not counted.
		for _, v := range s.exps[:s.n] {
			if v > 0 {
				n++
			}
		}
	default:
		for _, v := range s.work[:s.n] {
			if !math.IsInf(v, -1) {
				n++
			}
		}
	}
	t.Left[stage] = n
}
