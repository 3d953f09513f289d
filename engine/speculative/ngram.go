package speculative

import (
	"slices"

	"chat/engine/sampler"
)

// NGramDrafter guesses that the text repeats itself: it finds the most
// recent earlier occurrence of the last n ids of the text (prompt and
// generated), trying n = N down to 1, and proposes what followed it. The
// guesses are deterministic, so q is one-hot; the target's distribution is
// still kept exactly (see Verify).
type NGramDrafter struct {
	n     int
	guess []int
}

// NewNGram returns an n-gram drafter matching at most n ids (0: DefaultN).
func NewNGram(n int) *NGramDrafter {
	if n <= 0 {
		n = DefaultN
	}
	return &NGramDrafter{n: n}
}

// Reset does nothing: the drafter reads only the text it is given.
func (d *NGramDrafter) Reset([]int, uint64) {}

// Propose returns up to k ids that followed the latest match. A continuation
// that runs into the end of the text goes on with its own guesses, so a
// loop of period p is proposed for any k.
func (d *NGramDrafter) Propose(ctx []int, k int, _ sampler.Params) ([]int, [][]float64, error) {
	d.guess = d.guess[:0]
	at := match(ctx, ctx, len(ctx)-1, d.n)
	if at < 0 || k < 1 {
		return nil, nil, nil
	}
	for i := range k {
		j := at + i
		if j < len(ctx) {
			d.guess = append(d.guess, ctx[j])
		} else {
			d.guess = append(d.guess, d.guess[j-len(ctx)])
		}
	}
	return d.guess, nil, nil
}

// PromptLookup copies spans of the prompt: it finds the most recent place
// in the prompt where the last n ids of the text occur (n = N down to 1)
// and proposes the prompt ids that follow. Good for replies that quote or
// edit their prompt. q is one-hot, as for NGramDrafter.
type PromptLookup struct {
	n      int
	prompt []int
	guess  []int
}

// NewPromptLookup returns a prompt-lookup drafter matching at most n ids
// (0: DefaultN).
func NewPromptLookup(n int) *PromptLookup {
	if n <= 0 {
		n = DefaultN
	}
	return &PromptLookup{n: n}
}

// Reset remembers the reply's prompt.
func (d *PromptLookup) Reset(prompt []int, _ uint64) { d.prompt = append(d.prompt[:0], prompt...) }

// Propose returns up to k prompt ids that followed the latest match.
func (d *PromptLookup) Propose(ctx []int, k int, _ sampler.Params) ([]int, [][]float64, error) {
	at := match(d.prompt, ctx, len(d.prompt)-1, d.n)
	if at < 0 || k < 1 {
		return nil, nil, nil
	}
	d.guess = append(d.guess[:0], d.prompt[at:min(at+k, len(d.prompt))]...)
	return d.guess, nil, nil
}

// match returns the index in src just after the most recent occurrence of
// the last n ids of ctx, for the largest n <= maxN that occurs, counting
// only occurrences that end before limit (so at least src[limit] follows).
// It returns -1 when not even the last id occurs.
func match(src, ctx []int, limit, maxN int) int {
	for n := min(maxN, len(ctx)); n >= 1; n-- {
		tail := ctx[len(ctx)-n:]
		for j := min(limit, len(src)) - n; j >= 0; j-- {
			if src[j+n-1] == tail[n-1] && slices.Equal(src[j:j+n], tail) {
				return j + n
			}
		}
	}
	return -1
}
