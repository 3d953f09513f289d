package session

import (
	"slices"
	"strings"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/models/kvcache"
	"chat/models/testmodels"
)

// pollUntil polls s until cond holds for an update (or fails after
// testmodels.HangAfter, a hang).
func pollUntil(t *testing.T, s *Session, cond func(Update) bool) Update {
	t.Helper()
	deadline := time.Now().Add(testmodels.HangAfter)
	for time.Now().Before(deadline) {
		u := s.Poll()
		if cond(u) {
			return u
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("timed out polling")
	return Update{}
}

// The next-token view's numbers, as the session hands them to the UI, are
// the sampler's own for that step: in step mode the first token's preview
// lists, for every candidate, exactly the probability the sampler's
// distribution gives it (computed here again from the model's logits for
// the prompt), the stages the sampler applied, and the drawn step that
// follows has the same distribution and the reply's first token.
func TestNextTokenViewIsTheSamplers(t *testing.T) {
	m := embedded(t)
	p := sampler.Params{Temperature: 0.7, TopK: 40, TopP: 0.9, Seed: 11}
	v := testSettings("chat", 8, p)
	v.ViewNext, v.Step, v.ViewTokens = true, true, true
	s, err := New(m, Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send("Tell me a story about a cat."); err != nil {
		t.Fatal(err)
	}
	pre := pollUntil(t, s, func(u Update) bool { return u.Preview != nil }).Preview
	if !pre.Preview || pre.Drawn.ID != -1 || pre.Token != 1 {
		t.Fatalf("preview %+v", pre)
	}

	logits, err := kvcache.NewState(m).Forward(s.LastPrompt(), 1)
	if err != nil {
		t.Fatal(err)
	}
	smp := sampler.New(m.Info().VocabSize, p)
	var tr sampler.Trace
	smp.SetTrace(&tr)
	dist, err := smp.Dist(logits, s.LastPrompt())
	if err != nil {
		t.Fatal(err)
	}
	if len(pre.After) == 0 {
		t.Fatal("no candidates after the chain")
	}
	for _, c := range append(slices.Clone(pre.After), pre.Before...) {
		if c.After != dist[c.ID] {
			t.Fatalf("token %q: the view says %v after the chain, the sampler %v", c.Text, c.After, dist[c.ID])
		}
		if c.Text != string(m.Tokenizer().TokenBytes(c.ID)) {
			t.Fatalf("token %d shown as %q", c.ID, c.Text)
		}
	}
	var names []string
	for _, st := range pre.Stages {
		names = append(names, st.Name)
		if i := slices.Index(sampler.Order(), st.Name); !tr.Applied[i] || tr.Left[i] != st.Left {
			t.Fatalf("stage %s left %d, the sampler's trace %v %d", st.Name, st.Left, tr.Applied[i], tr.Left[i])
		}
	}
	if strings.Join(names, " ") != "temperature top-k top-p softmax" {
		t.Fatalf("stages %v, not in the sampler's order", names)
	}

	s.Step()
	u := pollUntil(t, s, func(u Update) bool { return u.Step != nil })
	if u.Step.Token != 1 || u.Step.Preview || len(u.Step.After) != len(pre.After) {
		t.Fatalf("step %+v after preview %+v", u.Step, pre)
	}
	for i, c := range u.Step.After {
		if c != pre.After[i] {
			t.Fatalf("the drawn step's candidate %d is %+v, the preview's %+v", i, c, pre.After[i])
		}
	}
	// Leave step mode: the reply runs to its end; its first token is the
	// one drawn, and it keeps its tokens for the token view.
	v = s.Settings()
	v.Step = false
	if err := s.Apply(v); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if len(res.IDs) == 0 || res.IDs[0] != u.Step.Drawn.ID {
		t.Fatalf("reply %v, drawn %d", res.IDs, u.Step.Drawn.ID)
	}
}

// A reply made with the token view on keeps its tokens, which spell its
// text, each with the probability it was drawn with; the user message gets
// the tokens of its turn, those served from the prefix cache marked: none
// the first time, all but the last (which is fed again for its logits)
// when the reply is regenerated.
func TestTokenViewKeepsTokens(t *testing.T) {
	v := testSettings("chat", 12, sampler.Params{Temperature: 1, Seed: 5})
	v.ViewTokens = true
	v.MaxTokens = 12
	s, err := New(embedded(t), Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for turn := range 2 {
		if turn == 0 {
			err = s.Send("Tell me a story.")
		} else {
			err = s.Regenerate()
		}
		if err != nil {
			t.Fatal(err)
		}
		pollUntil(t, s, func(u Update) bool { return u.Done })
		msgs := s.Messages()
		reply, user := msgs[len(msgs)-1], msgs[len(msgs)-2]
		var text strings.Builder
		for _, tk := range reply.Tokens {
			text.WriteString(tk.Text)
			if !(tk.Prob > 0 && tk.Prob <= 1) || tk.Prompt {
				t.Fatalf("reply token %+v", tk)
			}
		}
		if text.String() != reply.Content || len(reply.Tokens) == 0 {
			t.Fatalf("%d tokens spell %q, the reply is %q", len(reply.Tokens), text.String(), reply.Content)
		}
		cached := 0
		for _, tk := range user.Tokens {
			if !tk.Prompt {
				t.Fatalf("prompt token %+v", tk)
			}
			if tk.Cached {
				cached++
			}
		}
		if len(user.Tokens) != len(s.LastPrompt()) {
			t.Fatalf("the first turn's tokens are the whole prompt: %d of %d", len(user.Tokens), len(s.LastPrompt()))
		}
		if want := turn * (len(user.Tokens) - 1); cached != want {
			t.Fatalf("turn %d: %d prompt tokens from the cache, want %d", turn+1, cached, want)
		}
	}
}

// The KV map comes with every poll while it is on, and not otherwise.
func TestBlockMapPolled(t *testing.T) {
	v := testSettings("chat", 4, sampler.Params{Greedy: true})
	s, err := New(embedded(t), Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Poll().Blocks != nil {
		t.Fatal("a block map while the view is off")
	}
	v.ViewKV = true
	s.Apply(v)
	s.Send("Hi")
	u := pollUntil(t, s, func(u Update) bool { return u.Done })
	own := 0
	for _, b := range u.Blocks {
		if b == BlockOwn || b == BlockShared {
			own++
		}
	}
	if len(u.Blocks) == 0 || own == 0 {
		t.Fatalf("map of %d blocks, %d the conversation's", len(u.Blocks), own)
	}
}
