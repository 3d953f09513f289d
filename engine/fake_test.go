package engine

import (
	"errors"
	"fmt"

	"chat/engine/detok"
	"chat/models"
)

// fakeModel is a deterministic tiny "network": the logits of a position are
// a hash of every (token, position) pair from position 0 up to it, so any
// slip in what the cache holds, or at which positions, changes the output.
type fakeModel struct {
	info   models.Info
	tok    *fakeTok
	failOn int // Forward fails when fed this id (-1: never)
}

func newFake(rule models.WindowRule, ctx int) *fakeModel {
	tok := newFakeTok()
	return &fakeModel{
		info: models.Info{Name: "fake", Arch: "fake", VocabSize: tok.Size(), ContextLength: ctx, Window: rule},
		tok:  tok, failOn: -1,
	}
}

func (m *fakeModel) Info() models.Info           { return m.info }
func (m *fakeModel) Tokenizer() models.Tokenizer { return m.tok }
func (m *fakeModel) NewState() models.State {
	v, c := m.info.VocabSize, m.info.ContextLength
	return &fakeState{m: m, h: make([]uint64, 0, c), out: make([]float32, c*v)}
}

type fakeState struct {
	m   *fakeModel
	h   []uint64 // running hash per cached position
	out []float32
}

func mix(x uint64) uint64 { // splitmix64 finaliser
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func (s *fakeState) Forward(tokens []int, rows int) ([]float32, error) {
	v := s.m.info.VocabSize
	if len(tokens) == 0 {
		return nil, errors.New("fake: no tokens")
	}
	if len(s.h)+len(tokens) > s.Cap() {
		return nil, fmt.Errorf("fake: %d+%d positions > cap %d", len(s.h), len(tokens), s.Cap())
	}
	for _, t := range tokens {
		if t < 0 || t >= v {
			return nil, fmt.Errorf("fake: id %d out of range", t)
		}
		if t == s.m.failOn {
			return nil, errors.New("fake: failOn")
		}
	}
	for _, t := range tokens {
		prev := uint64(0x1234)
		if n := len(s.h); n > 0 {
			prev = s.h[n-1]
		}
		s.h = append(s.h, mix(prev^uint64(t)*0x9e3779b97f4a7c15^uint64(len(s.h))<<40))
	}
	rows = min(max(rows, 1), len(tokens))
	for r := range rows {
		h := s.h[len(s.h)-rows+r]
		row := s.out[r*v : (r+1)*v]
		for i := range row {
			row[i] = float32(mix(h+uint64(i)*0x632be59bd9b4e019)>>11)/(1<<53)*6 - 3
		}
	}
	return s.out[:rows*v], nil
}

func (s *fakeState) Len() int       { return len(s.h) }
func (s *fakeState) Cap() int       { return s.m.info.ContextLength }
func (s *fakeState) Truncate(n int) { s.h = s.h[:min(max(n, 0), len(s.h))] }

// fakeTok's tokens are byte fragments of multi-byte text, so characters are
// split across tokens (and random sequences can be invalid UTF-8).
type fakeTok struct{ pieces [][]byte }

const fakeText = "ab é日🙂\nßx本👍"

func newFakeTok() *fakeTok {
	b := []byte(fakeText)
	t := &fakeTok{}
	for i := range 3 * len(b) {
		start := i % len(b)
		t.pieces = append(t.pieces, b[start:min(len(b), start+1+i/len(b))])
	}
	t.pieces = append(t.pieces, []byte("<eot>"))
	return t
}

func (t *fakeTok) Encode(string) []int        { return nil }
func (t *fakeTok) EncodeSpecial(string) []int { return nil }
func (t *fakeTok) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}
func (t *fakeTok) Decode(ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, t.TokenBytes(id)...)
	}
	return detok.Decode(b)
}
func (t *fakeTok) Size() int { return len(t.pieces) }
func (t *fakeTok) EOT() int  { return len(t.pieces) - 1 }
func (t *fakeTok) BOS() int  { return -1 }
