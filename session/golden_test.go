package session

import (
	"encoding/json"
	"os"
	"testing"

	"chat/models"
	"chat/models/load"
	"chat/models/testmodels"
)

// The course's goldens for the embedded default, student-chat-1k.pt
// (../shared/models/course/golden/student-chat-1k.json), run through the
// session as the app runs them: chat replies, raw prompts in float and int8,
// and a 3-turn conversation; and student-chat.pt, the former default, from a
// file.

type chatGolden struct {
	Prompts []struct {
		Key         string `json:"key"`
		Text        string `json:"text"`
		PromptIDs   []int  `json:"prompt_ids"`
		MaxNew      int    `json:"max_new_tokens"`
		GreedyCache []int  `json:"greedy_cache"`
		Int8Greedy  []int  `json:"int8_greedy_cache"`
	} `json:"prompts"`
	ChatGreedy []struct {
		User         string `json:"user"`
		PromptIDs    []int  `json:"prompt_ids"`
		MaxNewTokens int    `json:"max_new_tokens"`
		ReplyIDs     []int  `json:"reply_ids"`
		Stopped      bool   `json:"stopped_on_eot"`
		ReplyText    string `json:"reply_text"`
	} `json:"chat_greedy"`
	MultiTurn struct {
		PromptIDs []int `json:"prompt_ids"`
		MaxNew    int   `json:"max_new_tokens"`
		ReplyIDs  []int `json:"reply_ids"`
		Turns     []struct {
			User      string `json:"user"`
			PromptLen int    `json:"prompt_len"`
			ReplyIDs  []int  `json:"reply_ids"`
			Stopped   bool   `json:"stopped_on_eot"`
			ReplyText string `json:"reply_text"`
		} `json:"turns"`
	} `json:"multi_turn"`
}

func readGolden(t *testing.T, name string) *chatGolden {
	t.Helper()
	raw, err := os.ReadFile(testmodels.Path(t, "course/golden/"+name))
	if err != nil {
		t.Fatal(err)
	}
	var g chatGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// The embedded default is student-chat-1k.pt: chat mode, a 1,024-token
// context, and the course's greedy chat replies (prompt ids and reply ids).
func TestEmbeddedIsStudentChat1k(t *testing.T) {
	g := readGolden(t, "student-chat-1k.json")
	m := embedded(t)
	if m.Info().Name != "student-chat-1k.pt" || m.Info().ContextLength != 1024 || DefaultMode(m) != "chat" {
		t.Fatalf("embedded model %+v, mode %s", m.Info(), DefaultMode(m))
	}
	checkChatGreedy(t, m, g)
}

// student-chat.pt still works from a file, with its own goldens.
func TestStudentChatFromFile(t *testing.T) {
	m, err := load.Open(testmodels.Path(t, "embed/student-chat.pt"))
	if err != nil {
		t.Fatal(err)
	}
	checkChatGreedy(t, m, readGolden(t, "student-chat.json"))
}

func checkChatGreedy(t *testing.T, m models.Model, g *chatGolden) {
	t.Helper()
	if len(g.ChatGreedy) == 0 {
		t.Fatal("no chat_greedy cases")
	}
	for _, c := range g.ChatGreedy {
		s := greedy(t, m, "chat", c.MaxNewTokens)
		if err := s.Send(c.User); err != nil {
			t.Fatal(err)
		}
		res := s.Wait()
		if !equal(s.LastPrompt(), c.PromptIDs) {
			t.Errorf("%q: prompt ids\n got %v\nwant %v", c.User, s.LastPrompt(), c.PromptIDs)
		}
		if !equal(res.IDs, c.ReplyIDs) || res.Text != c.ReplyText {
			t.Errorf("%q: reply\n got %v %q\nwant %v %q", c.User, res.IDs, res.Text, c.ReplyIDs, c.ReplyText)
		}
		if c.Stopped != (res.Reason == "eot") {
			t.Errorf("%q: reason %q, golden stopped_on_eot=%v", c.User, res.Reason, c.Stopped)
		}
	}
}

// Raw mode on the embedded model is the course's generate: encode_ordinary,
// no BOS, greedy ids as the course computes them, in float32 and after
// /set quant int8 (the course's quantize_int8).
func TestEmbeddedRawAndInt8Golden(t *testing.T) {
	g := readGolden(t, "student-chat-1k.json")
	m := embedded(t)
	for _, p := range g.Prompts {
		s := greedy(t, m, "raw", p.MaxNew)
		for _, quant := range []string{"f32", "int8"} {
			want := p.GreedyCache
			if quant == "int8" {
				if _, err := s.Set("quant", "int8"); err != nil {
					t.Fatal(err)
				}
				want = p.Int8Greedy
				s.New()
			}
			if err := s.Send(p.Text); err != nil {
				t.Fatal(err)
			}
			res := s.Wait()
			if !equal(s.LastPrompt(), p.PromptIDs) {
				t.Errorf("%s %s: prompt ids differ", p.Key, quant)
			}
			if !equal(res.IDs, want) {
				t.Errorf("%s %s: greedy ids\n got %v\nwant %v", p.Key, quant, res.IDs, want)
			}
		}
	}
}

// The 3-turn conversation of the goldens: each turn's greedy reply is the
// course's, and the third turn's prompt is the whole conversation rendered
// as the course's encode_chat renders it.
func TestEmbeddedMultiTurnGolden(t *testing.T) {
	g := readGolden(t, "student-chat-1k.json")
	mt := g.MultiTurn
	if len(mt.Turns) != 3 {
		t.Fatalf("multi_turn has %d turns", len(mt.Turns))
	}
	s := greedy(t, embedded(t), "chat", mt.MaxNew)
	for i, turn := range mt.Turns {
		if err := s.Send(turn.User); err != nil {
			t.Fatal(err)
		}
		res := s.Wait()
		if len(s.LastPrompt()) != turn.PromptLen {
			t.Errorf("turn %d: prompt of %d tokens, golden %d", i+1, len(s.LastPrompt()), turn.PromptLen)
		}
		if !equal(res.IDs, turn.ReplyIDs) || res.Text != turn.ReplyText || (res.Reason == "eot") != turn.Stopped {
			t.Errorf("turn %d: reply\n got %v %q (%s)\nwant %v %q", i+1, res.IDs, res.Text, res.Reason, turn.ReplyIDs, turn.ReplyText)
		}
		if i > 0 && res.Stats.ReusedTokens < mt.Turns[i-1].PromptLen {
			t.Errorf("turn %d reused %d tokens, want at least the previous prompt's %d", i+1, res.Stats.ReusedTokens, mt.Turns[i-1].PromptLen)
		}
	}
	if !equal(s.LastPrompt(), mt.PromptIDs) || !equal(s.last.IDs, mt.ReplyIDs) {
		t.Errorf("third turn: prompt or reply differs from multi_turn")
	}
	for _, m := range s.Messages() {
		if m.Dropped {
			t.Errorf("a turn was dropped from the 1,024-token context: %q", m.Content)
		}
	}
}
