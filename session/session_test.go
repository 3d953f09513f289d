package session

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"chat/config/settings"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/load"
	"chat/models/testmodels"
)

func embedded(t *testing.T) models.Model {
	t.Helper()
	m, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func greedy(t *testing.T, m models.Model, mode string, max int) *Session {
	t.Helper()
	s, err := New(m, Options{Settings: testSettings(mode, max, sampler.Params{Greedy: true})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// A second turn keeps the history (the course drops it) and reuses the KV of
// the first turn instead of prefilling it again.
func TestMultiTurnKeepsHistoryAndReusesCache(t *testing.T) {
	s := greedy(t, embedded(t), "chat", 40)
	s.vals.System = "You tell short stories."
	if err := s.Send("Tell me a story about a dog."); err != nil {
		t.Fatal(err)
	}
	first := s.Wait()
	if err := s.Send("Tell me another one."); err != nil {
		t.Fatal(err)
	}
	second := s.Wait()
	msgs := s.Messages()
	if len(msgs) != 5 || msgs[0].Role != System || msgs[3].Content != "Tell me another one." {
		t.Fatalf("messages = %+v", msgs)
	}
	if second.Stats.ReusedTokens < first.Stats.PromptTokens {
		t.Errorf("turn 2 reused %d tokens, want at least the %d of turn 1's prompt", second.Stats.ReusedTokens, first.Stats.PromptTokens)
	}
	// The prompt of turn 2 is the conversation before its reply, rendered.
	want := s.tmpl.Render(msgs[:4], true)
	if !equal(s.LastPrompt(), want) {
		t.Errorf("turn 2 prompt is not the rendered conversation")
	}
}

// When the conversation outgrows the context, the oldest turns are dropped
// and the user is told; a single message longer than the context is an error.
func TestContextOverflow(t *testing.T) {
	m := embedded(t)
	v := testSettings("chat", 32, sampler.Params{Greedy: true})
	v.Context = 256 // --ctx-size: the embedded model's own context is 1,024
	s, err := New(m, Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("The cat sat on the mat. ", 12) // ~80 tokens
	var notices []string
	for i := 0; i < 6; i++ {
		if err := s.Send(long); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		s.Wait()
		notices = append(notices, s.Poll().Notices...)
		if n := len(s.LastPrompt()); n > 256 {
			t.Fatalf("turn %d: prompt of %d tokens exceeds the context", i, n)
		}
	}
	msgs := s.Messages()
	if len(msgs) != 12 {
		t.Errorf("the transcript lost messages: %d, want all 12", len(msgs))
	}
	if !msgs[0].Dropped || msgs[len(msgs)-1].Dropped || s.Info().ContextLength != 256 {
		t.Errorf("the turns out of the context are not marked: first %v last %v; context %d", msgs[0].Dropped, msgs[len(msgs)-1].Dropped, s.Info().ContextLength)
	}
	if len(notices) == 0 || !strings.Contains(notices[0], "no longer sees") {
		t.Errorf("no notice about dropped turns: %q", notices)
	}
	err = s.Send(strings.Repeat("The cat sat on the mat. ", 60))
	if err == nil || !strings.Contains(err.Error(), "context") {
		t.Errorf("too-long message: err = %v, want a context error", err)
	}
}

func TestSendWhileBusy(t *testing.T) {
	s := greedy(t, embedded(t), "chat", 200)
	if err := s.Send("Tell me a story about a cat."); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("again"); !errors.Is(err, ErrBusy) {
		t.Errorf("second Send while busy: err = %v, want ErrBusy", err)
	}
	s.Stop()
	if res := s.Wait(); res.Reason != "stopped" && res.Reason != "eot" {
		t.Errorf("after Stop: reason %q", res.Reason)
	}
}

// Raw mode is the course's generate_text.py: the prompt is encode_ordinary
// with no BOS, and the continuation does not stop at EOT.
func TestRawModeMatchesCourseGreedy(t *testing.T) {
	path := testmodels.Path(t, "course/golden/student.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Prompts []struct {
			Text        string `json:"text"`
			PromptIDs   []int  `json:"prompt_ids"`
			MaxNew      int    `json:"max_new_tokens"`
			GreedyCache []int  `json:"greedy_cache"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	m, err := load.Open(testmodels.Path(t, "course/student.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if DefaultMode(m) != "raw" {
		t.Errorf("a pretraining checkpoint should open in raw mode")
	}
	for _, p := range g.Prompts {
		s := greedy(t, m, "raw", p.MaxNew)
		if err := s.Send(p.Text); err != nil {
			t.Fatal(err)
		}
		res := s.Wait()
		if !equal(s.LastPrompt(), p.PromptIDs) {
			t.Errorf("prompt ids differ for %.30q", p.Text)
		}
		if !equal(res.IDs, p.GreedyCache) {
			t.Errorf("greedy ids differ for %.30q:\n got %v\nwant %v", p.Text, res.IDs, p.GreedyCache)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// testSettings are the defaults with mode, a reply budget and pinned knobs.
func testSettings(mode string, max int, p sampler.Params) settings.Values {
	v := settings.Defaults(mode)
	v.Mode, v.MaxTokens, v.Sampler, v.RandomSeed = mode, max, p, false
	return v
}
