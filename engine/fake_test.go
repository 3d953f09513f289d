package engine

import (
	"chat/engine/detok"
	"chat/models"
	"chat/models/modeltest"
)

// fakeModel is a deterministic tiny "network": the logits of a position are
// a hash of every (token, position) pair from position 0 up to it, so any
// slip in what the cache holds, or at which positions, changes the output.
type fakeModel struct {
	*modeltest.Chain
	info models.Info // the Chain's Meta, for the tests' convenience
}

func newFake(rule models.WindowRule, ctx int) *fakeModel {
	tok := newFakeTok()
	info := models.Info{Name: "fake", Arch: "fake", VocabSize: tok.Size(), ContextLength: ctx, Window: rule}
	return &fakeModel{Chain: &modeltest.Chain{Meta: info, Tok: tok, Start: 0x1234, FailOn: -1}, info: info}
}

func mix(x uint64) uint64 { return modeltest.Mix(x) }

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

// controlTok marks one id of fakeTok a control token.
type controlTok struct {
	*fakeTok
	control int
}

func (t controlTok) IsControl(id int) bool { return id == t.control }
