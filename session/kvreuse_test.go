package session

import "testing"

// TestPrefixCacheAcrossTurns drives the embedded chat model through the
// real chat template: ten turns (short, so that they fit the 256-position
// context: once the session drops the oldest turns, the prompt after the
// system prompt changes and only the system prompt is reused), a regenerated
// reply, an edited earlier message, and a new conversation with the same
// system prompt each reuse the cached prefix, and Stats.KV reports the pool
// and the hit rate.
func TestPrefixCacheAcrossTurns(t *testing.T) {
	s := greedy(t, embedded(t), "chat", 4)
	s.vals.System = "Be kind."
	lines := []string{"A story about a dog.", "His name?", "His home?", "Friends?",
		"Games?", "Sunny?", "Food?", "Who won?", "Tired?", "Good night!"}
	prompt, reused, held := 0, 0, 0
	var st Stats
	for i, line := range lines {
		if err := s.Send(line); err != nil {
			t.Fatal(err)
		}
		res := s.Wait()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		st = s.Poll().Stats
		t.Logf("turn %d: prompt %d reused %d (msgs from %d), reply %d ids", i+1, res.Stats.PromptTokens, res.Stats.ReusedTokens, s.ctxStart, len(res.IDs))
		if s.ctxStart > 0 {
			t.Fatalf("turn %d: the chat outgrew the context", i+1)
		}
		if i > 0 && res.Stats.ReusedTokens < held {
			t.Fatalf("turn %d: reused %d; the last turn left %d ids cached", i+1, res.Stats.ReusedTokens, held)
		}
		held = res.Stats.PromptTokens + len(res.IDs) - 1 // the last id sampled is never fed
		if i > 0 {
			prompt += res.Stats.PromptTokens
			reused += res.Stats.ReusedTokens
		}
	}
	frac := float64(reused) / float64(prompt)
	t.Logf("turns 2-10: %d of %d prompt tokens reused (%.1f%%); KV %+v", reused, prompt, 100*frac, st.KV)
	if frac < 0.8 || st.KV.Blocks == 0 || st.KV.Used == 0 || st.KV.Seq == 0 || st.KV.HitRate <= 0 || st.KV.LastReuse <= 0 {
		t.Fatalf("reuse %.3f, KV stats %+v", frac, st.KV)
	}

	check := func(what string, min int) {
		t.Helper()
		res := s.Wait()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Stats.ReusedTokens < min {
			t.Fatalf("%s: reused %d of %d, want >= %d", what, res.Stats.ReusedTokens, res.Stats.PromptTokens, min)
		}
		t.Logf("%s: reused %d of %d", what, res.Stats.ReusedTokens, res.Stats.PromptTokens)
	}
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	check("regenerate", prompt/9) // the whole prompt but its last id
	if err := s.Edit(3, "What was her name?"); err != nil {
		t.Fatal(err)
	}
	check("edit of the second user message", 16)
	if err := s.New(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("Tell me a story about a cat."); err != nil {
		t.Fatal(err)
	}
	check("new conversation, same system prompt", 16)
}
