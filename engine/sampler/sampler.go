// Package sampler turns one row of logits into one token id.
//
// The processors run in a fixed order (see Order): the constraint mask
// (SetMask: ids a constraint does not allow get -Inf); repetition, frequency
// and presence penalties over the last PenaltyWindow ids; DRY; if Greedy, the
// argmax of the penalised logits; otherwise temperature, then either
// mirostat or top-nσ, top-k, typical, top-p, min-p and XTC; a float64
// softmax and one uniform draw from a seeded PCG (inverse CDF). With the
// knobs llama.cpp added off, everything after the penalties is the course's
// sample_next_token (course-format.md §7.1), in float64 rather than float32;
// the added stages sit in llama.cpp's order, and temperature stays first, as
// in the course (top-nσ and top-k keep the same ids either way).
//
// The ids still in play are kept as a compact list in id order (work,
// exps and ids, first n entries): once top-k or top-p has cut a 128k
// vocabulary to a few ids, the later stages, the softmax and the draw look
// at those only, and exp is computed for the survivors of top-k only. Every
// sum still runs in id order over the same non-zero terms, so each
// probability has the same bits as with a pass over the whole vocabulary.
//
// A Sampler owns scratch buffers sized to the vocabulary, so Sample does not
// allocate. It is not safe for concurrent use.
package sampler

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"chat/models/kernels"
)

// Stage names one processor of the sampling pipeline.
type Stage struct {
	Name string // short name, e.g. "top-p"
	What string // one line for --help and the sampler panel
}

// Order lists the processor names in the order Sample applies them. It is
// data so that the UI and --help show exactly what the code does.
func Order() []string {
	st := Stages()
	names := make([]string, len(st))
	for i, s := range st {
		names[i] = s.Name
	}
	return names
}

// Stages is Order with a one-line description of each processor.
func Stages() []Stage {
	return []Stage{
		{"mask", "if a constraint is on (--format, --json-schema, --regex, --grammar): ids it does not allow get -Inf"},
		{"penalties", "repeat / frequency / presence penalties over the last PenaltyWindow ids"},
		{"dry", "ids that would extend a repeat of >= allowed-length ids lose multiplier * base^(length - allowed-length)"},
		{"greedy", "if Greedy: argmax of the penalised logits, stop"},
		{"temperature", "divide by max(T, 1e-6) when T != 1 (T = 0 still samples)"},
		{"mirostat", "if Mirostat 1 or 2: truncate at the surprise mu that tracks tau, instead of top-n-sigma ... xtc"},
		{"top-n-sigma", "keep logits >= max - n * their standard deviation"},
		{"top-k", "keep logits >= the k-th largest (ties kept)"},
		{"typical", "keep the ids whose surprise is nearest the entropy, up to mass p"},
		{"top-p", "keep the smallest sorted prefix whose mass before each token is <= p"},
		{"min-p", "drop probs < m * max prob"},
		{"xtc", "with chance probability: drop every id with prob >= threshold but the least likely of them"},
		{"softmax", "float64 softmax of the surviving logits"},
		{"draw", "one uniform u in [0,1) from the seeded PCG; first id whose cumulative prob > u*total"},
	}
}

// Stage indices: positions in Stages() (and in Trace).
const (
	StageMask = iota
	StagePenalties
	StageDRY
	StageGreedy
	StageTemperature
	StageMirostat
	StageTopNSigma
	StageTopK
	StageTypical
	StageTopP
	StageMinP
	StageXTC
	StageSoftmax
	StageDraw
	NumStages
)

// Runs reports whether the knobs in p switch stage (a Stage* index) on. It
// is the one rule: each stage of the chain runs only when it says so, and
// the panel lists the stages it leaves on. Greedy ends the chain at the
// argmax, and mirostat runs in place of the stages it replaces. The mask
// is no knob (SetMask), so it is not on here. A stage that is on may still
// keep every id: top-k with k at least the vocabulary, XTC when its coin
// says no.
func (p *Params) Runs(stage int) bool {
	if stage > StageGreedy && p.Greedy || p.MirostatOn() && MirostatReplaces(stage) {
		return false
	}
	switch stage {
	case StagePenalties:
		rep := p.RepeatPenalty
		return rep != 0 && rep != 1 || p.FrequencyPenalty != 0 || p.PresencePenalty != 0
	case StageDRY:
		return p.DRYOn()
	case StageGreedy:
		return p.Greedy
	case StageTemperature:
		return p.Temperature != 1
	case StageMirostat:
		return p.MirostatOn()
	case StageTopNSigma:
		return p.TopNSigma > 0
	case StageTopK:
		return p.TopK > 0
	case StageTypical:
		return p.TypicalP > 0 && p.TypicalP < 1
	case StageTopP:
		return p.TopP > 0 && p.TopP < 1
	case StageMinP:
		return p.MinP > 0 && p.MinP < 1
	case StageXTC:
		return p.XTCOn()
	case StageSoftmax, StageDraw:
		return true
	}
	return false
}

// ErrNoCandidates is returned when every logit is -Inf or NaN.
var ErrNoCandidates = errors.New("sampler: no finite logit to sample from")

// Sampler applies Params to logits. Create it with New.
type Sampler struct {
	p     Params
	vocab int

	pcg *rand.PCG
	rng *rand.Rand

	// XTC's own draws (xtc.go): coin is this token's until Sample uses it.
	xtcPCG  *rand.PCG
	xtcRNG  *rand.Rand
	coin    float64
	coinSet bool

	mu    float64 // mirostat's surprise bound; set from tau at the reply's first token
	muSet bool

	breakers *Breakers // DRY's sequence breakers (SetBreakers)
	z        []int32   // DRY's Z-function scratch

	mask  []uint64 // SetMask's allowed ids; nil: all
	trace *Trace   // SetTrace's record of the next calls; nil: none

	// The candidates: ids[:n] in increasing order, their logits work[:n]
	// and, from the softmax's exp on, exps[:n] = exp(logit - max) > 0 with
	// sum their sum (in id order) and max the largest logit; normalize
	// turns exps into the probabilities. Until the first cut n is the
	// vocabulary and work is indexed by id.
	work []float64
	exps []float64
	ids  []int32
	n    int
	sum  float64
	max  float64

	probs  []float64 // final distribution of the last call, by id
	live   int       // probs is zero but at ids[:live]
	counts []int32   // penalty occurrence counts, all zero between calls
	iota   []int32   // 0, 1, 2, ...
	heap   []float64 // top-k min-heap; typical's keys
	bucket []uint16  // keepNearest: each candidate's bucket
	sel    []int32   // keepNearest: the positions of the candidates that may stay
	order  []int32   // keepNearest: the candidates of one bucket, sorted
	mass   [numBuckets]float64
}

// New returns a sampler for a vocabulary of vocab ids, seeded from p.Seed.
func New(vocab int, p Params) *Sampler {
	if vocab < 1 {
		vocab = 1
	}
	s := &Sampler{
		vocab:  vocab,
		work:   make([]float64, vocab),
		exps:   make([]float64, vocab),
		ids:    make([]int32, vocab),
		iota:   make([]int32, vocab),
		bucket: make([]uint16, vocab),
		sel:    make([]int32, 0, vocab),
		probs:  make([]float64, vocab),
		counts: make([]int32, vocab),
		heap:   make([]float64, 0, vocab),
		order:  make([]int32, 0, vocab),
	}
	// Touch every buffer now: fresh memory faults in on first use, about a
	// millisecond for a 32k vocabulary's megabyte on these VMs, which a
	// reply's first token would otherwise pay.
	clear(s.heap[:vocab])
	clear(s.order[:vocab])
	clear(s.work)
	clear(s.exps)
	clear(s.ids)
	clear(s.bucket)
	clear(s.sel[:vocab])
	for i := range s.iota {
		s.iota[i] = int32(i)
	}
	clear(s.probs)
	clear(s.counts)
	s.pcg = rand.NewPCG(0, 0)
	s.rng = rand.New(s.pcg)
	s.xtcPCG = rand.NewPCG(0, 0)
	s.xtcRNG = rand.New(s.xtcPCG)
	s.p = p
	s.Reset(p.Seed)
	return s
}

// Renew makes a used sampler what New(s.Vocab(), p) returns, keeping its
// buffers: the knobs, the seed, no mask, no trace, no penalty counts, no
// DRY breakers, mirostat's mu unset.
func (s *Sampler) Renew(p Params) {
	s.p, s.mask, s.trace, s.breakers, s.muSet = p, nil, nil, nil, false
	clear(s.counts)
	s.Reset(p.Seed)
}

// Reset re-seeds the RNG: the same seed gives the same sequence of draws.
func (s *Sampler) Reset(seed uint64) {
	// PCG needs two words; the second is a fixed odd constant so that seed 0
	// is as good as any other.
	s.pcg.Seed(seed, 0x9e3779b97f4a7c15)
	s.xtcPCG.Seed(seed, 0x2545f4914f6cdd1d)
	s.coinSet = false
}

// Stateful reports whether the knobs use state that changes with each
// drawn id (mirostat's mu, XTC's draw), so that a distribution holds for
// one token only: speculative decoding steps aside for them.
func (s *Sampler) Stateful() bool {
	return s.p.MirostatOn() || s.p.XTCOn()
}

// SetParams replaces the knobs. It does not re-seed the RNG (call Reset).
func (s *Sampler) SetParams(p Params) { s.p = p }

// SetMask limits the following Sample and Dist calls to the ids whose bit
// is set in allowed (bit id%64 of word id/64), the first processor of the
// chain; nil lifts the limit. The slice is read, not copied: it must not
// change while it is set.
func (s *Sampler) SetMask(allowed []uint64) { s.mask = allowed }

// Params returns the current knobs.
func (s *Sampler) Params() Params { return s.p }

// Vocab is the number of ids the sampler was built for.
func (s *Sampler) Vocab() int { return s.vocab }

// Probs is the distribution the last Sample drew from, indexed by id (one-hot
// for greedy). It is owned by the sampler and overwritten by the next call.
func (s *Sampler) Probs() []float64 { return s.probs }

// Sample picks the next id from logits (one row, len == vocab). history is
// the ids so far (prompt and generated); the penalties read its last
// PenaltyWindow entries. logits is not modified. It is Dist followed by Draw
// (or the argmax when Greedy, which uses no randomness).
func (s *Sampler) Sample(logits []float32, history []int) (int, error) {
	best, err := s.dist(logits, history)
	if err != nil || s.p.Greedy {
		return best, err
	}
	id := -1
	if i := s.Draw(s.exps[:s.n]); i >= 0 {
		id = int(s.ids[i])
	}
	s.note(StageDraw, true)
	s.mirostatLearn(s.probs, id)
	s.coinSet = false
	return id, nil
}

// Dist is the distribution Sample would draw from (the filtered, normalised
// probabilities; one-hot at the argmax when Greedy), without drawing: the RNG
// is not used. Speculative decoding compares these for the target and the
// draft. The slice is Probs(), overwritten by the next call.
func (s *Sampler) Dist(logits []float32, history []int) ([]float64, error) {
	if _, err := s.dist(logits, history); err != nil {
		return nil, err
	}
	return s.probs, nil
}

// dist fills s.probs with the distribution to draw from and returns the
// argmax when Greedy.
func (s *Sampler) dist(logits []float32, history []int) (int, error) {
	if len(logits) != s.vocab {
		return -1, fmt.Errorf("sampler: %d logits for a vocabulary of %d", len(logits), s.vocab)
	}
	s.clearProbs()
	s.n = s.vocab
	if s.p.Greedy && s.mask == nil && !s.p.Runs(StagePenalties) && !s.p.Runs(StageDRY) {
		// Nothing changes the logits before the argmax, and clean keeps their
		// order (NaN never wins), so it is taken on them without the copy.
		s.begin()
		return s.greedy(kernels.Argmax(logits))
	}
	// Without penalties or DRY between them, load applies the temperature
	// too: one pass instead of two.
	early := !s.p.Greedy && !s.p.Runs(StagePenalties) && !s.p.Runs(StageDRY)
	t := 1.0
	if early {
		t = s.divisor()
	}
	s.max = s.load(logits, t)
	s.begin()
	s.note(StagePenalties, s.penalize(history))
	s.note(StageDRY, s.dry(history))

	if s.p.Greedy {
		return s.greedy(argmax(s.work))
	}

	if early {
		s.note(StageTemperature, t != 1)
	} else {
		s.note(StageTemperature, s.temperature())
	}
	s.note(StageTopNSigma, s.topNSigma())
	s.note(StageTopK, s.topK())
	if math.IsInf(s.max, -1) {
		return -1, ErrNoCandidates
	}
	// The stages below remove ids and never change the others' logits, so
	// exp(l - max) is computed once and reused. Ids whose exp is 0 (removed,
	// or underflowing) can never be drawn and leave the list.
	e, z, gone := s.exps[:s.n], 0.0, false
	for i, v := range s.work[:s.n] {
		x := 0.0
		if !math.IsInf(v, -1) {
			x = math.Exp(v - s.max)
		}
		e[i] = x
		z += x
		gone = gone || x == 0
	}
	s.sum = z
	if gone {
		s.compact()
	}
	s.note(StageMirostat, s.mirostat())
	s.note(StageTypical, s.typical())
	s.note(StageTopP, s.topP())
	s.note(StageMinP, s.minP())
	s.note(StageXTC, s.xtc())
	s.normalize()
	s.note(StageSoftmax, true)
	return -1, nil
}

// compact drops the candidates whose exp a stage set to 0, keeping the
// order, and recomputes sum and max over the rest.
func (s *Sampler) compact() { s.keep(s.iota[:s.n]) }

// keep makes the candidates those at the given positions (increasing)
// whose exp is not 0, and recomputes sum and max over them.
func (s *Sampler) keep(slots []int32) {
	w, e, ids := s.work, s.exps, s.ids
	k, z, max := 0, 0.0, math.Inf(-1)
	for _, i := range slots {
		if x := e[i]; x > 0 {
			w[k], e[k], ids[k] = w[i], x, ids[i]
			z += x
			if w[i] > max {
				max = w[i]
			}
			k++
		}
	}
	s.n, s.sum, s.max = k, z, max
}

// keepAtLeast drops the candidates whose logit is below th (before the
// exp: top-n-sigma and top-k); a NaN th drops none.
func (s *Sampler) keepAtLeast(th float64) {
	w, ids := s.work, s.ids
	k := 0
	for i, v := range w[:s.n] {
		if !(v < th) {
			w[k], ids[k] = v, ids[i]
			k++
		}
	}
	s.n = k
}

// clearProbs zeroes what the last call left in probs.
func (s *Sampler) clearProbs() {
	for _, id := range s.ids[:s.live] {
		s.probs[id] = 0
	}
	s.live = 0
}

// greedy makes probs one-hot at best (probs is all zero here).
func (s *Sampler) greedy(best int) (int, error) {
	if best < 0 {
		return -1, ErrNoCandidates
	}
	s.probs[best] = 1
	s.ids[0], s.live = int32(best), 1
	s.note(StageGreedy, true)
	return best, nil
}

// load copies logits into s.work as float64 (clean), divided by t when it
// is not 1 (clean again, as temperature does), applying the mask on the
// way: the ids it leaves out (and those past the end of a short mask) get
// -Inf. It sets ids to 0, 1, ... and returns the largest value. It works
// a word (64 ids) at a time: a full word is a plain copy, an empty one one
// fill, and in a mixed one only the cleared bits are visited, so a mask
// costs about nothing over the copy.
func (s *Sampler) load(logits []float32, t float64) float64 {
	w := s.work
	copy(s.ids, s.iota)
	if s.mask == nil {
		max := math.Inf(-1)
		if t == 1 {
			for i, v := range logits {
				w[i] = clean(float64(v))
				if w[i] > max {
					max = w[i]
				}
			}
			return max
		}
		for i, v := range logits {
			w[i] = clean(clean(float64(v)) / t)
			if w[i] > max {
				max = w[i]
			}
		}
		return max
	}
	for i := 0; i < len(w); i += 64 {
		var word uint64
		if i/64 < len(s.mask) {
			word = s.mask[i/64]
		}
		block, in := w[i:min(i+64, len(w))], logits[i:min(i+64, len(w))]
		if word == 0 {
			copy(block, negInf[:len(block)])
			continue
		}
		for j, v := range in {
			block[j] = clean(float64(v))
			if t != 1 {
				block[j] = clean(block[j] / t)
			}
		}
		if word == ^uint64(0) {
			continue
		}
		out := ^word
		if len(block) < 64 {
			out &= 1<<len(block) - 1
		}
		for ; out != 0; out &= out - 1 {
			block[bits.TrailingZeros64(out)] = negInf[0]
		}
	}
	return w[argmaxOr0(w)]
}

// negInf is 64 × -Inf, copied over the logits of an all-masked word.
var negInf = func() (a [64]float64) {
	for i := range a {
		a[i] = math.Inf(-1)
	}
	return
}()

// clean maps NaN to -Inf (never sampled) and +Inf to the largest float so the
// arithmetic below stays finite.
func clean(v float64) float64 {
	if v != v {
		return math.Inf(-1)
	}
	if v > math.MaxFloat64 {
		return math.MaxFloat64
	}
	return v
}

// argmax is the first index of the largest finite-or-+Inf value, or -1 when
// all are -Inf.
func argmax(w []float64) int {
	best, bv := -1, math.Inf(-1)
	for i, v := range w {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}

func argmaxOr0(w []float64) int {
	if i := argmax(w); i >= 0 {
		return i
	}
	return 0
}
