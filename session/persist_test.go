package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"chat/engine/sampler"
	"chat/models"
	"chat/session/store"
)

var shared struct {
	once sync.Once
	m    models.Model
}

// sharedModel loads the embedded model once for these tests: sessions only
// read its weights, each has its own engine and KV cache.
func sharedModel(t *testing.T) models.Model {
	shared.once.Do(func() { shared.m = embedded(t) })
	if shared.m == nil {
		t.Fatal("embedded model did not load")
	}
	return shared.m
}

// stored opens a greedy chat session writing to a fresh store under a
// temporary XDG_DATA_HOME (never the real home).
func stored(t *testing.T, m models.Model, max int) (*Session, *store.Store) {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir, err := store.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	st := store.Open(dir)
	return storedIn(t, m, st, max), st
}

func storedIn(t *testing.T, m models.Model, st *store.Store, max int) *Session {
	t.Helper()
	s, err := New(m, Options{Settings: testSettings("chat", max, sampler.Params{Greedy: true, Seed: 1}), Store: st, ModelIdentity: "sha256:test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func turn(t *testing.T, s *Session, text string) string {
	t.Helper()
	if err := s.Send(text); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res.Text
}

func sameMessages(a, b []Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Role != b[i].Role || a[i].Content != b[i].Content || !a[i].Time.Equal(b[i].Time) {
			return false
		}
	}
	return true
}

// Two turns are autosaved; a new Session loads them with the same transcript
// and settings, and its next prompt is the whole history rendered.
func TestSaveLoadContinue(t *testing.T) {
	m := sharedModel(t)
	s, st := stored(t, m, 30)
	s.SetSystem("You tell short stories.")
	turn(t, s, "Tell me a story about a dog.")
	turn(t, s, "Tell me another one.")
	id := s.Saved().ID
	if id == "" {
		t.Fatal("not autosaved after a reply")
	}
	if err := s.Save("dogs"); err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].Name != "dogs" || list[0].Messages != 4 || list[0].Title != "Tell me a story about a dog." {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_DATA_HOME"), "chat", "sessions", id+".json")); err != nil {
		t.Errorf("session file not under XDG_DATA_HOME: %v", err)
	}

	s2 := storedIn(t, m, st, 7)
	s2.SetSampler(sampler.Params{Temperature: 1.5})
	if err := s2.Load("dogs"); err != nil {
		t.Fatal(err)
	}
	if !sameMessages(s2.Messages(), s.Messages()) {
		t.Fatalf("loaded transcript differs:\n%+v\n%+v", s2.Messages(), s.Messages())
	}
	if s2.Sampler() != s.Sampler() || s2.MaxTokens() != 30 || s2.Info().System != "You tell short stories." || s2.Saved() != s.Saved() {
		t.Errorf("settings not restored: %+v %d %+v", s2.Sampler(), s2.MaxTokens(), s2.Saved())
	}
	turn(t, s2, "And a third?")
	msgs := s2.Messages()
	if want := s2.tmpl.Render(msgs[:6], true); !equal(s2.LastPrompt(), want) {
		t.Errorf("the prompt after loading is not the whole history rendered")
	}
	if r, _ := st.Load(id); len(r.Messages) != 7 { // the system prompt first
		t.Errorf("the loaded session was not autosaved into its own file: %d messages", len(r.Messages))
	}
	if list, _ := st.List(); len(list) != 1 {
		t.Errorf("continuing a session made a new file: %d sessions", len(list))
	}

	s3 := storedIn(t, m, st, 30)
	if err := s3.Resume(); err != nil || len(s3.Messages()) != 7 {
		t.Errorf("Resume: %v, %d messages", err, len(s3.Messages()))
	}
	if got := s3.History(); strings.Join(got, "|") != "Tell me a story about a dog.|Tell me another one.|And a third?" {
		t.Errorf("History = %q", got)
	}
}

// Regenerate with greedy gives the same reply, reusing the prompt's KV.
func TestRegenerateGreedy(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 16)
	turn(t, s, "Tell me a story about a cat.")
	first := turn(t, s, "What was the cat's name?")
	before := s.Messages()
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if res.Text != first {
		t.Errorf("regenerated %q, first %q", res.Text, first)
	}
	if res.Stats.ReusedTokens < res.Stats.PromptTokens-1 {
		t.Errorf("regenerate reused %d of %d prompt tokens; only the reply should be computed", res.Stats.ReusedTokens, res.Stats.PromptTokens)
	}
	after := s.Messages()
	if len(after) != len(before) || after[2].Content != before[2].Content || !after[2].Time.Equal(before[2].Time) {
		t.Errorf("regenerate changed the conversation:\n%+v\n%+v", before, after)
	}
	s2, _ := stored(t, sharedModel(t), 30)
	if err := s2.Regenerate(); err == nil {
		t.Error("Regenerate with no reply succeeded")
	}
}

// Edit replaces a user message, drops what came after and resends.
func TestEditDropsLaterTurns(t *testing.T) {
	s, st := stored(t, sharedModel(t), 20)
	s.SetSystem("Be brief.") // Messages() starts with it: index 1 is the first user message
	turn(t, s, "Tell me a story about a dog.")
	turn(t, s, "Tell me another one.")
	if err := s.Edit(1, "Tell me a story about a bird."); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	msgs := s.Messages()
	if len(msgs) != 3 || msgs[1].Content != "Tell me a story about a bird." || msgs[2].Role != Assistant {
		t.Fatalf("after Edit: %+v", msgs)
	}
	if want := s.tmpl.Render(msgs[:2], true); !equal(s.LastPrompt(), want) {
		t.Errorf("edited prompt still contains the dropped turns")
	}
	if r, _ := st.Load(s.Saved().ID); len(r.Messages) != 3 || r.Messages[0].Role != "system" || r.Title != "Tell me a story about a bird." {
		t.Errorf("saved after edit: %+v", r)
	}
	for i, want := range map[int]string{0: "system prompt", 2: "reply", 3: "no message", -1: "no message"} {
		if err := s.Edit(i, "x"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Edit(%d) = %v, want %q", i, err, want)
		}
	}
	if err := s.Edit(1, "   "); err == nil || len(s.Messages()) != 3 {
		t.Errorf("a failed edit changed the conversation: %v, %d messages", err, len(s.Messages()))
	}
}

func TestNewKeepsSettingsAndBusy(t *testing.T) {
	s, st := stored(t, sharedModel(t), 200)
	s.SetSystem("sys")
	turn(t, s, "Hello there.")
	old := s.Saved().ID
	if err := s.Send("Tell me a long story about a cat."); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{s.New, s.Clear, s.Regenerate, s.Resume, func() error { return s.Load("1") }, func() error { return s.Edit(1, "x") }} {
		if err := f(); !errors.Is(err, ErrBusy) {
			t.Errorf("while busy: %v, want ErrBusy", err)
		}
	}
	s.Stop()
	s.Wait()
	p := s.Sampler()
	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	if len(s.Messages()) != 1 || s.Info().System != "sys" || s.Sampler() != p || s.Saved().ID != "" {
		t.Errorf("after Clear: %+v %+v", s.Messages(), s.Saved())
	}
	turn(t, s, "Hi.")
	if s.Saved().ID == old {
		t.Error("a new conversation overwrote the old file")
	}
	if list, _ := st.List(); len(list) != 2 {
		t.Errorf("%d sessions saved, want 2", len(list))
	}
	if h := s.History(); strings.Join(h, "|") != "Hello there.|Tell me a long story about a cat.|Hi." {
		t.Errorf("History across sessions = %q", h)
	}
}

func TestNoStore(t *testing.T) {
	s := greedy(t, sharedModel(t), "chat", 10)
	turn(t, s, "Hi.")
	for _, err := range []error{s.Save("x"), s.Load("x"), s.Resume()} {
		if !errors.Is(err, ErrNoStore) {
			t.Errorf("err = %v, want ErrNoStore", err)
		}
	}
	if h := s.History(); len(h) != 1 || h[0] != "Hi." {
		t.Errorf("History = %q", h)
	}
}

// A save that cannot be written is told once as a notice; the chat goes on.
func TestAutosaveFailureIsANotice(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	s := storedIn(t, sharedModel(t), store.Open(filepath.Join(file, "sessions")), 10)
	turn(t, s, "Hi.")
	turn(t, s, "Hi again.")
	n := s.Poll().Notices
	if len(n) != 1 || !strings.Contains(n[0], "autosave failed") {
		t.Errorf("notices = %q", n)
	}
	if err := s.Save(""); err == nil {
		t.Error("Save into a file path succeeded")
	}
}

func TestLoadOtherModelNotice(t *testing.T) {
	s, st := stored(t, sharedModel(t), 10)
	turn(t, s, "Hi.")
	r, _ := st.Load(s.Saved().ID)
	r.Model = store.Model{Name: "other.gguf", Identity: "size:5"}
	r.ID = "other"
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	if err := s.Load("other"); err != nil {
		t.Fatal(err)
	}
	if n := s.Poll().Notices; len(n) != 1 || !strings.Contains(n[0], "other.gguf") {
		t.Errorf("notices = %q", n)
	}
	if err := s.Load("missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load(missing) = %v", err)
	}
}

// A saved session is a file: a megabyte model name or setting in it makes
// notices of a few hundred bytes, not megabytes.
func TestLongSavedStringsAreCut(t *testing.T) {
	s, st := stored(t, sharedModel(t), 10)
	turn(t, s, "Hi.")
	r, _ := st.Load(s.Saved().ID)
	long := strings.Repeat("long", 1<<18)
	r.Model = store.Model{Name: long, Identity: "size:5"}
	r.Settings["temperature"] = long
	r.ID = "long"
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	if err := s.Load("long"); err != nil {
		t.Fatal(err)
	}
	n := s.Poll().Notices
	if len(n) != 2 {
		t.Errorf("%d notices, want 2: %.300q", len(n), n)
	}
	for _, x := range n {
		if !strings.Contains(x, "longlong") || len(x) > 400 {
			t.Errorf("notice of %d bytes, want at most 400 showing the string: %.300q", len(x), x)
		}
	}
}
