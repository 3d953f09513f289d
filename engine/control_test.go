package engine

import (
	"slices"
	"testing"

	"chat/engine/detok"
)

// A control token the model emits (Llama 3's <|reserved_special_token_N|>,
// an <|eot_id|> that is not the stop id) is not reply text, as in
// llama.cpp without --special: the ids are the same, the text leaves its
// bytes out.
func TestControlTokensAreNotText(t *testing.T) {
	run := func(m *fakeModel) Result {
		e := New(m)
		defer e.Close()
		r, err := e.Start(Request{Prompt: prompt(8, 3), MaxTokens: 24, Sampler: knobs["greedy"]})
		if err != nil {
			t.Fatal(err)
		}
		return r.Wait()
	}
	plain := run(newFake(0, 256))
	if len(plain.IDs) < 4 {
		t.Fatalf("too short a reply: %v", plain.IDs)
	}
	c := plain.IDs[2]
	m := newFake(0, 256)
	m.Chain.Tok = controlTok{newFakeTok(), c}
	got := run(m)
	var want []byte
	tok := newFakeTok()
	for _, id := range plain.IDs {
		if id != c {
			want = append(want, tok.TokenBytes(id)...)
		}
	}
	if !slices.Equal(got.IDs, plain.IDs) || got.Text != detok.Decode(want) {
		t.Errorf("ids %v, text %q; want ids %v, text %q", got.IDs, got.Text, plain.IDs, want)
	}
}
