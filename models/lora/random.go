package lora

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"chat/models"
	"chat/models/nn"
	"chat/models/weights"
)

// Random is an adapter of the given rank on every attention and
// feed-forward matrix of m (and its output layer, unless that is the
// embedding), with Gaussian A and B of standard deviation sd from seed:
// for tests and demonstrations (a trained adapter's B starts at zero; a
// random one changes every output). Its pairs are named as m's own format
// names them (a PEFT adapter for a course checkpoint, a GGUF one for a GGUF
// model), with alpha so that alpha/rank is 1.
func Random(m models.Model, rank int, sd float64, seed uint64) (*Adapter, error) {
	v, ok := m.(variant)
	if !ok || rank < 1 {
		return nil, fmt.Errorf("lora: no random adapter of rank %d for %s", rank, m.Info().Name)
	}
	key, format := "pt", "peft"
	if len(nn.Tensors(v.Arch(), key)) == 0 {
		key, format = "gguf", "gguf"
	}
	_, idx, err := index(v)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	gauss := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * sd)
		}
		return out
	}
	a := &Adapter{Name: fmt.Sprintf("random-r%d-%d", rank, seed), Format: format, Scale: 1}
	for _, t := range nn.Tensors(v.Arch(), key) {
		lookup := t.Name
		if format == "gguf" {
			lookup = "gguf:" + t.Name
		}
		if _, ok := idx[lookup]; t.Linear == nil || !ok || strings.Contains(t.Name, "embd") || strings.Contains(t.Name, "embed") ||
			(t.Keep && t.Linear == tiedTo(v, key)) {
			continue
		}
		rows, cols := t.Linear.Rows(), t.Linear.Cols()
		a.Pairs = append(a.Pairs, Pair{Target: t.Name, Alpha: float64(rank),
			A: weights.NewF32(gauss(rank*cols), rank, cols), B: weights.NewF32(gauss(rows*rank), rows, rank)})
	}
	sortPairs(a.Pairs)
	return a, nil
}

// tiedTo is the token embedding matrix of v, which a tied output layer is.
func tiedTo(v variant, key string) weights.Linear {
	for _, t := range nn.Tensors(v.Arch(), key) {
		if t.Name == "token_embed.weight" || t.Name == "token_embd.weight" {
			return t.Linear
		}
	}
	return nil
}
