package modeltest

import (
	"errors"
	"fmt"
	"math"

	"chat/models"
)

// Chain is a model for engine and speculative-decoding tests: each cached
// position holds a 64-bit state (in its key row) computed from the state of
// the position before it and the position's token, and the logits of a
// position are a function of its state. With the default Step every state
// hashes all (token, position) pairs up to it, so any slip in what a cache
// holds, or at which positions, changes the logits.
type Chain struct {
	Meta   models.Info
	Tok    models.Tokenizer
	Start  uint64                                   // the state before position 0
	Step   func(prev uint64, token, pos int) uint64 // nil: StepHash
	Logits func(dst []float32, state uint64)        // nil: LogitsHash
	FailOn int                                      // Forward fails when fed this id (-1: never)
	Calls  int                                      // Forward calls (all runners)
}

func (m *Chain) Info() models.Info           { return m.Meta }
func (m *Chain) Tokenizer() models.Tokenizer { return m.Tok }
func (m *Chain) KVLayout() models.KVLayout {
	return models.KVLayout{Layers: 1, KDim: 2, VDim: 1, Heads: 1}
}
func (m *Chain) NewRunner() models.Runner { return &chainRunner{m: m} }

// Mix is splitmix64's finaliser.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// StepHash is the default Step: a hash of the previous state, the token and
// the position.
func StepHash(prev uint64, token, pos int) uint64 {
	return Mix(prev ^ uint64(token)*0x9e3779b97f4a7c15 ^ uint64(pos)<<40)
}

// LogitsHash is the default Logits: pseudo-random values in [-3, 3).
func LogitsHash(dst []float32, h uint64) {
	for i := range dst {
		dst[i] = float32(Mix(h+uint64(i)*0x632be59bd9b4e019)>>11)/(1<<53)*6 - 3
	}
}

type chainRunner struct {
	m       *Chain
	out     []float32
	scratch []float32
	count   []int
	row     [2]float32
}

func (r *chainRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	m := r.m
	v := m.Meta.VocabSize
	if b.Len() == 0 {
		return nil, errors.New("chain: empty batch")
	}
	for _, t := range b.Tokens {
		if t < 0 || t >= v {
			return nil, fmt.Errorf("chain: id %d out of range", t)
		}
		if t == m.FailOn {
			return nil, errors.New("chain: failOn")
		}
	}
	var err error
	if r.count, err = b.Reserve(kv, r.count); err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	m.Calls++
	step := m.Step
	if step == nil {
		step = StepHash
	}
	logits := m.Logits
	if logits == nil {
		logits = LogitsHash
	}
	r.out = r.out[:0]
	k := r.row[:]
	for i, t := range b.Tokens {
		s, pos := kv[b.Seq[i]], b.Pos[i]
		prev := m.Start
		if pos > 0 {
			prev = r.state(s, pos-1)
		}
		h := step(prev, t, pos)
		k[0], k[1] = math.Float32frombits(uint32(h)), math.Float32frombits(uint32(h>>32))
		s.WriteRow(0, pos, k, k[:1])
		if b.Logits[i] {
			n := len(r.out)
			for cap(r.out) < n+v {
				r.out = append(r.out[:cap(r.out)], 0)
			}
			r.out = r.out[:n+v]
			logits(r.out[n:], h)
		}
	}
	return r.out, nil
}

// state reads the state cached at position pos.
func (r *chainRunner) state(s models.KV, pos int) uint64 {
	bs := s.BlockSize()
	if len(r.scratch) < 2*bs {
		r.scratch = make([]float32, 2*bs)
	}
	k, _ := s.Keys(0, pos/bs, pos/bs+1, r.scratch)
	k = k[2*(pos%bs):]
	return uint64(math.Float32bits(k[0])) | uint64(math.Float32bits(k[1]))<<32
}
