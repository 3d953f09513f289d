package sampler

import (
	"bytes"
	"math"
	"slices"
	"strings"
)

// DRY ("don't repeat yourself", oobabooga text-generation-webui #5677, as
// llama.cpp's --dry-* flags run it): if the last n ids of the history also
// occur earlier, followed there by id t, then sampling t would extend that
// repeat to n+1 ids. For every t the longest such n is found; when
// n >= DRYAllowedLength, t's logit loses
// DRYMultiplier × DRYBase^(n − DRYAllowedLength). A repeat never reaches back
// over a sequence breaker (a text such as "\n"), and an id that is a breaker
// by itself is never penalised.

// DefaultBreakers are llama.cpp's and the webui's sequence breakers.
var DefaultBreakers = []string{"\n", ":", "\"", "*"}

// JoinBreakers is the Params.DRYBreakers form of a list: each text ended by
// a NUL. Texts that are empty or hold a NUL are left out.
func JoinBreakers(list []string) string {
	var b strings.Builder
	for _, t := range list {
		if t != "" && !strings.Contains(t, "\x00") {
			b.WriteString(t)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// SplitBreakers is the list JoinBreakers was given.
func SplitBreakers(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

// Limits of a breaker, as llama.cpp's: its first 40 bytes count, and the
// ids after its first id are at most 20. MaxBreakers bounds their number
// (the settings refuse more): each is a pass over the vocabulary.
const (
	maxBreakerBytes = 40
	maxBreakerTail  = 20
	MaxBreakers     = 64
)

// Breakers are sequence breakers as ids of one vocabulary: a text may be
// any run of ids, so each id whose text ends with the start of a breaker is
// a head, followed by the ids the rest of the breaker encodes to (its tail);
// an id whose text holds a whole breaker is a head with an empty tail.
type Breakers struct {
	key   string // the Params.DRYBreakers they were made from
	heads map[int32][][]int32
}

// NewBreakers makes the Breakers of joined (Params.DRYBreakers) for a
// vocabulary of vocab ids: piece is an id's text, encode a text's ids.
func NewBreakers(joined string, vocab int, piece func(id int) []byte, encode func(string) []int) *Breakers {
	b := &Breakers{key: joined, heads: map[int32][][]int32{}}
	add := func(id int, tail []int32) {
		for _, t := range b.heads[int32(id)] {
			if slices.Equal(t, tail) {
				return
			}
		}
		b.heads[int32(id)] = append(b.heads[int32(id)], tail)
	}
	for _, br := range SplitBreakers(joined) {
		if br == "" {
			continue // not from JoinBreakers; it would make every id a breaker
		}
		brb := []byte(br[:min(len(br), maxBreakerBytes)])
		// tails[k]: the ids of brb[k:], encoded once (a breaker has fewer
		// than 40 tails, met by thousands of ids).
		tails := make([][]int32, len(brb))
		for id := range vocab {
			word := piece(id)
			if bytes.Contains(word, brb) {
				add(id, nil)
				continue
			}
			// Each place where the rest of word starts br: the ids of the
			// rest of br follow this id.
			for pos := range word {
				rest := word[pos:]
				if rest[0] != brb[0] || !bytes.HasPrefix(brb, rest) {
					continue
				}
				k := len(rest)
				if tails[k] == nil {
					ids := encode(string(brb[k:]))
					tails[k] = make([]int32, 0, min(len(ids), maxBreakerTail))
					for _, t := range ids[:min(len(ids), maxBreakerTail)] {
						tails[k] = append(tails[k], int32(t))
					}
				}
				// A rest the vocabulary cannot encode (no byte fallback)
				// never follows: this id is no head of it. An empty tail
				// would make it a breaker by itself.
				if len(tails[k]) == 0 {
					continue
				}
				add(id, tails[k])
			}
		}
	}
	return b
}

// Key is the Params.DRYBreakers b was made from.
func (b *Breakers) Key() string {
	if b == nil {
		return ""
	}
	return b.key
}

// alone reports whether id is a breaker by itself.
func (b *Breakers) alone(id int) bool {
	if b == nil {
		return false
	}
	for _, t := range b.heads[int32(id)] {
		if len(t) == 0 {
			return true
		}
	}
	return false
}

// SetBreakers gives DRY its sequence breakers (nil: none). The engine makes
// them from Params.DRYBreakers and the model's vocabulary (Breakers.Key says
// which they are).
func (s *Sampler) SetBreakers(b *Breakers) { s.breakers = b }

// Breakers are the sequence breakers SetBreakers gave.
func (s *Sampler) Breakers() *Breakers { return s.breakers }

// DRYOn reports whether DRY is on.
func (p *Params) DRYOn() bool {
	return p.DRYMultiplier != 0 && p.DRYBase >= 1 && p.DRYPenaltyLastN != 0
}

// dry applies the DRY penalty to s.work for the ids that would extend a
// repeat of history. It reports whether it was on.
func (s *Sampler) dry(history []int) bool {
	p := &s.p
	if !p.Runs(StageDRY) {
		return false
	}
	if n := p.DRYPenaltyLastN; n > 0 && len(history) > n {
		history = history[len(history)-n:]
	}
	h, allowed := history, p.DRYAllowedLength
	last := len(h) - 1
	if len(h) <= allowed {
		return true
	}

	// The longest repeat may not reach back over the breaker nearest the
	// end: limit is the number of ids after it.
	limit := len(h)
	for i := last; i >= 0 && s.breakers != nil && limit == len(h); i-- {
		longest := -1
		for _, tail := range s.breakers.heads[int32(h[i])] {
			if len(tail) > longest && i+len(tail) <= last && matches(h[i+1:], tail) {
				longest = len(tail)
			}
		}
		if longest >= 0 {
			limit = last - i - longest
		}
	}
	if limit < allowed {
		return true
	}

	// z[k]: how many ids h[..last-k] and h have in common at their ends
	// (the Z-function of h read backwards), so position j = last-k ends a
	// copy of the history's last z[k] ids and h[j+1] would extend it.
	z := s.dryZ(len(h))
	for k, lo, hi := 1, 0, 0; k < len(h); k++ {
		n := 0
		if k <= hi {
			n = min(int(z[k-lo]), hi-k+1)
		}
		for k+n < len(h) && h[last-n] == h[last-k-n] {
			n++
		}
		z[k] = int32(n)
		if k+n-1 > hi {
			lo, hi = k, k+n-1
		}
	}

	// The longest repeat each id would extend, + 1 (0: none), in s.counts,
	// which is all zero outside the penalties.
	rep := s.counts
	for j := range last {
		n := min(int(z[last-j]), limit)
		if t := h[j+1]; n >= allowed && t >= 0 && t < s.vocab && int32(n+1) > rep[t] {
			rep[t] = int32(n + 1)
		}
	}
	// base^e stays finite: e at most the log of the largest float64.
	maxExp := math.Inf(1)
	if p.DRYBase > 1 {
		maxExp = math.Floor(709 / math.Log(p.DRYBase))
	}
	w := s.work
	for j := range last {
		t := h[j+1]
		if t < 0 || t >= s.vocab || rep[t] == 0 {
			continue
		}
		n := int(rep[t]) - 1
		rep[t] = 0
		if s.breakers.alone(t) {
			continue
		}
		e := min(float64(n-allowed), maxExp)
		w[t] = clean(w[t] - p.DRYMultiplier*math.Pow(p.DRYBase, e))
	}
	return true
}

// matches reports whether h starts with tail.
func matches(h []int, tail []int32) bool {
	if len(h) < len(tail) {
		return false
	}
	for i, t := range tail {
		if h[i] != int(t) {
			return false
		}
	}
	return true
}

// dryZ is the Z-function scratch for a history of n ids, grown when needed
// (so a reply's steps stop allocating once its history stops outgrowing it).
func (s *Sampler) dryZ(n int) []int32 {
	if cap(s.z) < n {
		s.z = make([]int32, n, max(n, 2*cap(s.z)))
	}
	return s.z[:n]
}
