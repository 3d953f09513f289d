// Package speculative is draft-then-verify decoding that keeps the target
// model's distribution exactly (Leviathan et al. 2023; the course's
// speculative_generate, course-format.md §7.3).
//
// A Drafter guesses up to k tokens cheaply; the target scores all of them in
// ONE forward pass over k+1 rows; Verify keeps guess i with probability
// min(1, p/q), resamples the first rejected position from max(0, p−q), and
// takes a bonus token from the last row when every guess is kept. p and q
// are the sampler's filtered distributions (temperature, top-k, top-p,
// min-p, penalties) under the same knobs, so the output follows exactly the
// distribution plain sampling would give; greedy keeps a guess iff it is the
// target's argmax, so greedy output equals plain greedy.
//
// Drafters: a second, smaller model with its own KV cache (ModelDrafter),
// n-gram continuation of the text so far (NGram), and prompt lookup
// (PromptLookup). The engine (package chat/engine) runs the rounds.
package speculative

import (
	"bytes"
	"errors"
	"fmt"

	"chat/engine/sampler"
	"chat/models"
)

// Drafter proposes guesses for the target to verify. It is used by one
// goroutine at a time.
type Drafter interface {
	// Reset starts a reply: prompt is its prompt, seed re-seeds any draws.
	Reset(prompt []int, seed uint64)
	// Propose returns up to k guesses to follow ctx (the prompt and every id
	// generated so far), drawn under the knobs p, and q[i], the distribution
	// guess i was drawn from. A nil q, or a nil q[i], means one-hot at the
	// guess (a deterministic drafter). Both slices belong to the drafter
	// until the next call. No guesses is a valid answer.
	Propose(ctx []int, k int, p sampler.Params) (guesses []int, q [][]float64, err error)
}

// Method names a drafter.
type Method int

const (
	Off    Method = iota // plain decoding
	Draft                // a second, smaller model (Config.Draft)
	NGram                // continue the latest earlier occurrence of the last n ids
	Lookup               // copy spans of the prompt that follow the last n ids
)

var methodNames = [...]string{"off", "draft", "ngram", "lookup"}

func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod reads "off", "draft", "ngram" or "lookup".
func ParseMethod(s string) (Method, error) {
	for i, n := range methodNames {
		if s == n {
			return Method(i), nil
		}
	}
	return Off, fmt.Errorf("speculative: unknown method %q (want off, draft, ngram or lookup)", s)
}

const (
	// MaxK bounds the guesses per round (Stats keeps per-position arrays).
	MaxK = 16
	// DefaultK is the course's default draft_k.
	DefaultK = 4
	// DefaultN is the longest n-gram NGram and PromptLookup match.
	DefaultN = 3
)

// Config is a speculation setting.
type Config struct {
	Method Method
	K      int          // guesses per round, 1..MaxK; 0 = DefaultK
	Draft  models.Model // the draft model, for Method Draft
	N      int          // longest n-gram to match, for NGram and Lookup; 0 = DefaultN
	// Adapt lets the engine choose each round's guesses (up to K) from the
	// drafter's measured acceptance and cost, and stop speculating when it
	// loses time (engine/adapt.go). Off: K guesses every round.
	Adapt bool
}

// Guesses is the effective K.
func (c Config) Guesses() int {
	if c.K == 0 {
		return DefaultK
	}
	return c.K
}

// New checks c against the target model and returns its drafter (nil for
// Off). A draft model must have the target's tokenizer.
func New(c Config, target models.Model) (Drafter, error) {
	if k := c.Guesses(); k < 1 || k > MaxK {
		return nil, fmt.Errorf("speculative: k = %d; it must be 1..%d", c.K, MaxK)
	}
	if c.N < 0 || c.N > 64 {
		return nil, fmt.Errorf("speculative: n-gram length %d; it must be 0 (default %d) to 64", c.N, DefaultN)
	}
	n := c.N
	if n == 0 {
		n = DefaultN
	}
	switch c.Method {
	case Off:
		return nil, nil
	case Draft:
		if c.Draft == nil {
			return nil, errors.New("speculative: method draft needs a draft model")
		}
		if target == nil {
			return nil, errors.New("speculative: no target model")
		}
		if err := SameTokenizer(target, c.Draft); err != nil {
			return nil, err
		}
		return NewModelDrafter(c.Draft)
	case NGram:
		return NewNGram(n), nil
	case Lookup:
		return NewPromptLookup(n), nil
	}
	return nil, fmt.Errorf("speculative: unknown method %v", c.Method)
}

// SameTokenizer reports whether the draft can speak for the target: the
// same number of output rows and ids, and the same bytes for every id.
func SameTokenizer(target, draft models.Model) error {
	ti, di := target.Info(), draft.Info()
	tt, dt := target.Tokenizer(), draft.Tokenizer()
	switch {
	case tt == nil || dt == nil:
		return errors.New("speculative: a model has no tokenizer")
	case ti.VocabSize != di.VocabSize:
		return fmt.Errorf("speculative: the draft %q has %d output rows, the target %q %d: they need the same tokenizer",
			di.Name, di.VocabSize, ti.Name, ti.VocabSize)
	case tt.Size() != dt.Size():
		return fmt.Errorf("speculative: the draft %q has %d tokens, the target %q %d: they need the same tokenizer",
			di.Name, dt.Size(), ti.Name, tt.Size())
	}
	for id := range tt.Size() {
		if !bytes.Equal(tt.TokenBytes(id), dt.TokenBytes(id)) {
			return fmt.Errorf("speculative: token %d is %q for the target %q but %q for the draft %q: they need the same tokenizer",
				id, tt.TokenBytes(id), ti.Name, dt.TokenBytes(id), di.Name)
		}
	}
	return nil
}

// Stats count one reply's speculation. They are plain values (fixed-size
// arrays), safe to copy to another goroutine.
type Stats struct {
	Method       Method
	K            int    // guesses per round as set (the most, when adapting)
	KNow         int    // guesses of the last round (adapting: the chosen k)
	Note         string // adapting: what it decided ("off: drafts lost time (0.81× plain)"), else ""
	Rounds       int    // verification passes (one target forward over n+1 rows each)
	TargetPasses int    // target forwards after the prompt's prefill: rounds plus plain steps
	Proposed     int    // guesses drafted
	Accepted     int    // guesses the target kept
	Generated    int    // tokens produced (as Engine Stats.GenTokens)

	PosProposed [MaxK]int // guesses drafted at position i of a round
	PosAccepted [MaxK]int // of those, kept
}

// AcceptanceRate is Accepted / Proposed (the course's acceptance_rate).
func (s Stats) AcceptanceRate() float64 { return float64(s.Accepted) / float64(max(1, s.Proposed)) }

// MeanAccepted is the mean number of tokens a round yields: the kept
// guesses plus the replacement or bonus token.
func (s Stats) MeanAccepted() float64 {
	return float64(s.Accepted+s.Rounds) / float64(max(1, s.Rounds))
}

// TokensPerPass is Generated / TargetPasses (the course's
// tokens_per_target_call). Plain decoding is about 1.
func (s Stats) TokensPerPass() float64 {
	return float64(s.Generated) / float64(max(1, s.TargetPasses))
}

// PosRate is the acceptance rate at position i of a round.
func (s Stats) PosRate(i int) float64 {
	if i < 0 || i >= MaxK {
		return 0
	}
	return float64(s.PosAccepted[i]) / float64(max(1, s.PosProposed[i]))
}
