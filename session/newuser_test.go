package session

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/gguf"
	"chat/models/load"
	"chat/models/testmodels"
	"chat/session/store"
)

// What a new user hit (issue 15), session side; each test failed before
// its fix.

// sampled opens a chat session with the course's chat sampler (T 0.8,
// top-p 0.95) and the seed left random, as the app starts.
func sampled(t *testing.T, m models.Model, max int) *Session {
	t.Helper()
	v := settings.Defaults("chat")
	v.Mode, v.MaxTokens = "chat", max
	s, err := New(m, Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Bug 1: every request reset the sampler to the same seed, so regenerate
// gave the identical reply. Now each reply draws a fresh seed unless the
// seed is pinned; a pinned seed reproduces the reply.
func TestRegenerateDrawsFreshRandomness(t *testing.T) {
	s := sampled(t, sharedModel(t), 40)
	turn(t, s, "Tell me a story about a cat.")
	replies := map[string]bool{s.Messages()[1].Content: true}
	seeds := map[uint64]bool{s.LastSeed(): true}
	for range 3 {
		if err := s.Regenerate(); err != nil {
			t.Fatal(err)
		}
		replies[s.Wait().Text] = true
		seeds[s.LastSeed()] = true
	}
	if len(replies) < 2 || len(seeds) != 4 {
		t.Errorf("4 replies with a random seed: %d different texts, %d seeds", len(replies), len(seeds))
	}
	if _, err := s.Set("seed", "7"); err != nil {
		t.Fatal(err)
	}
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	first := s.Wait().Text
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	if again := s.Wait().Text; again != first || s.LastSeed() != 7 {
		t.Errorf("a pinned seed does not reproduce the reply:\n%q\n%q", first, again)
	}
}

// Bug 2 (session side): quitting while a reply streamed lost the turn.
// Closing the session keeps the partial reply and saves it.
func TestCloseKeepsTheStreamingTurn(t *testing.T) {
	s, st := stored(t, sharedModel(t), 400)
	if err := s.Send("Tell me a long story about a dog."); err != nil {
		t.Fatal(err)
	}
	for s.Poll().Text == "" {
	}
	s.Close()
	list, err := st.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("after Close: %d saved sessions, %v", len(list), err)
	}
	r, _ := st.Load(list[0].ID)
	if n := len(r.Messages); n != 2 || r.Messages[1].Role != "assistant" || r.Messages[1].Content == "" {
		t.Fatalf("saved %+v", r.Messages)
	}
}

// eosAfter is a GGUF model whose logits put end-of-sequence first once the
// sequence reaches `at` positions, as a model that finished its text.
type eosAfter struct {
	models.Model
	f  *gguf.File
	at int
}

func (m eosAfter) GGUF() *gguf.File         { return m.f }
func (m eosAfter) NewRunner() models.Runner { return &eosRunner{Runner: m.Model.NewRunner(), m: m} }

type eosRunner struct {
	models.Runner
	m eosAfter
}

func (r *eosRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	lg, err := r.Runner.Forward(b, kv)
	if err != nil {
		return lg, err
	}
	eos := r.m.Tokenizer().(interface{ EOS() int }).EOS()
	v, row := r.m.Info().VocabSize, 0
	for i, want := range b.Logits {
		if !want {
			continue
		}
		if b.Pos[i]+1 >= r.m.at {
			lg[row*v+eos] = 1e9
		}
		row++
	}
	return lg, nil
}

// Bug 5: GGUF raw mode ran past the end-of-text token (llama.cpp stops at
// the first). It stops at the model's end-of-generation tokens now, unless
// ignore_eos; course raw mode still runs to its budget, as the course does.
func TestRawGGUFStopsAtEndOfText(t *testing.T) {
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	base, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := eosAfter{Model: base, f: f, at: 12}
	s := greedy(t, m, "raw", 50)
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if p := s.LastPrompt(); len(p) == 0 || p[0] != m.Tokenizer().BOS() || m.Tokenizer().BOS() < 0 {
		t.Errorf("raw GGUF prompt %v does not start with BOS", p)
	}
	if res.Reason != "eot" || len(res.IDs) >= 50 || slices.Contains(res.IDs, 2) || strings.Contains(res.Text, "</s>") {
		t.Errorf("raw GGUF reply: reason %q, %d ids %v", res.Reason, len(res.IDs), res.IDs)
	}
	if _, err := s.Set("ignore_eos", "on"); err != nil {
		t.Fatal(err)
	}
	s.New()
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); res.Reason != "length" || len(res.IDs) != 50 {
		t.Errorf("with ignore_eos: reason %q, %d ids", res.Reason, len(res.IDs))
	}
	if got := RawStops(sharedModel(t)); got != nil {
		t.Errorf("course raw mode stops at %v; the course's generate does not stop", got)
	}
}

// Bug 8: a system prompt set mid-chat was drawn at the top, above the turns
// sent without it. It is a message where it was set.
func TestSystemPromptSetMidChatStaysInPlace(t *testing.T) {
	s := greedy(t, sharedModel(t), "chat", 8)
	turn(t, s, "Tell me a story about a cat.")
	if _, _, err := s.Command("/system You tell short stories."); err != nil {
		t.Fatal(err)
	}
	turn(t, s, "Tell me a story about a dog.")
	var roles []Role
	for _, m := range s.Messages() {
		roles = append(roles, m.Role)
	}
	if want := []Role{User, Assistant, System, User, Assistant}; !slices.Equal(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	// The model sees the current system prompt first, as the template wants.
	want := s.tmpl.Render([]Message{{Role: System, Content: "You tell short stories."}, s.msgs[0], s.msgs[1], s.msgs[3]}, true)
	if !equal(s.LastPrompt(), want) {
		t.Errorf("the prompt is not the system prompt then the turns")
	}
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if n := len(s.Messages()); n != 5 {
		t.Errorf("regenerate changed the transcript to %d messages", n)
	}
}

// Bug 10: --resume restored the sampler, the system prompt and max_tokens,
// but not the weight format or draft_k. Every setting a session keeps comes
// back.
func TestResumeRestoresEverySetting(t *testing.T) {
	m := sharedModel(t)
	s, st := stored(t, m, 12)
	for _, set := range [][2]string{{"quant", "int8"}, {"draft_k", "6"}, {"spec", "ngram"}, {"stop", "The end"}, {"seed", "random"}, {"top_k", "3"}} {
		if _, err := s.Set(set[0], set[1]); err != nil {
			t.Fatal(err)
		}
	}
	turn(t, s, "Tell me a story about a cat.")
	s.Set("top_k", "9") // after the last reply: saved too
	s2 := storedIn(t, m, st, 50)
	if err := s2.Resume(); err != nil {
		t.Fatal(err)
	}
	v := s2.Settings()
	if v.Quant != "int8" || v.DraftK != 6 || v.Spec != "ngram" || !slices.Equal(v.Stop, []string{"The end"}) ||
		!v.RandomSeed || v.Sampler.TopK != 9 || v.MaxTokens != 12 || s2.Speculation().Method != speculative.NGram {
		t.Errorf("resumed settings %+v", v)
	}
	// A setting that cannot come back is told, and the rest still do.
	r, _ := st.Latest()
	r.Settings["spec"] = "draft"
	st.Save(r)
	s3 := storedIn(t, m, st, 50)
	if err := s3.Resume(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(s3.Poll().Notices, "\n"); !strings.Contains(n, "the saved spec draft is not restored: no draft model") || s3.Settings().DraftK != 6 || s3.Quant() != "int8" {
		t.Errorf("notices %q, draft_k %d", n, s3.Settings().DraftK)
	}
}

// A conversation held on a q4_k_m GGUF file and resumed on another model
// said "the saved quant q4_k_m is not restored: quant must be one of ..."
// (every format, several lines): the weight format was that file's own,
// not a choice to carry over.
func TestResumeOnAnotherModelKeepsItsWeights(t *testing.T) {
	m := sharedModel(t)
	s, st := stored(t, m, 4)
	turn(t, s, "Tell me a story about a cat.")
	r, _ := st.Latest()
	r.Model = store.Model{Name: "Llama 3.2 1B", Identity: "size:807693760"}
	r.Settings["quant"] = "q4_k_m"
	st.Save(r)
	s2 := storedIn(t, m, st, 50)
	if err := s2.Resume(); err != nil {
		t.Fatal(err)
	}
	n := strings.Join(s2.Poll().Notices, "\n")
	if strings.Contains(n, "quant") || !strings.Contains(n, "held with Llama 3.2 1B") || s2.Quant() != m.Info().Quant {
		t.Errorf("notices %q, quant %s", n, s2.Quant())
	}
}

// Bug 12: an unknown session named /sessions on the command line. The store
// says only what is wrong; /load adds where to look in the TUI.
func TestUnknownSessionMessages(t *testing.T) {
	s, st := stored(t, sharedModel(t), 4)
	_, err := st.Resolve("nope")
	if !errors.Is(err, store.ErrNotFound) || strings.Contains(err.Error(), "/sessions") {
		t.Errorf("store: %v", err)
	}
	if _, _, err := s.Command("/load nope"); err == nil || !strings.HasSuffix(err.Error(), "(see /sessions; /model FILE switches the model)") {
		t.Errorf("/load nope: %v", err)
	}
}

// Bug 11: "prefill 736 tok/s" after a 1-token prefill. Too few prefilled
// tokens get no rate.
func TestTinyPrefillHasNoRate(t *testing.T) {
	s := greedy(t, sharedModel(t), "chat", 4)
	turn(t, s, "Tell me a story about a cat.")
	if st := s.Poll().Stats; st.PrefillTokS <= 0 {
		t.Errorf("a %d-token prefill has no rate", st.PromptTokens-st.ReusedTokens)
	}
	if err := s.Regenerate(); err != nil { // the whole prompt is cached: one token is fed again
		t.Fatal(err)
	}
	s.Wait()
	if st := s.Poll().Stats; st.PromptTokens-st.ReusedTokens >= prefillRateMin || st.PrefillTokS != 0 {
		t.Errorf("a %d-token prefill quotes %.0f tok/s", st.PromptTokens-st.ReusedTokens, st.PrefillTokS)
	}
}

// /set stop: the reply ends before a stop string.
func TestStopStrings(t *testing.T) {
	s := greedy(t, sharedModel(t), "chat", 60)
	turn(t, s, "Tell me a story about a cat.")
	full := s.Messages()[1].Content
	cut := strings.Index(full, " named")
	if cut < 0 {
		t.Fatalf("reply %q has no \" named\"", full)
	}
	if r, err := s.Set("stop", `" named"`); err != nil || r != `stop at " named"` {
		t.Fatalf("/set stop: %q %v", r, err)
	}
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); res.Reason != "stop" || res.Text != full[:cut] {
		t.Errorf("reason %q text %q, want %q", res.Reason, res.Text, full[:cut])
	}
	s.Set("stop", "none")
	if v := s.Settings(); len(v.Stop) != 0 {
		t.Errorf("/set stop none left %q", v.Stop)
	}
}

// /kv save and /kv load: a new session that loads the file reuses its KV
// for a prompt that starts with the same tokens.
func TestKVSaveLoad(t *testing.T) {
	m := sharedModel(t)
	file := filepath.Join(t.TempDir(), "chat.kv")
	a := greedy(t, m, "chat", 20)
	turn(t, a, "Tell me a story about a cat.")
	if _, r, err := a.Command("/kv save " + file); err != nil || !strings.Contains(r, "saved the KV cache") {
		t.Fatalf("/kv save: %q %v", r, err)
	}
	b := greedy(t, m, "chat", 20)
	_, r, err := b.Command("/kv load " + file)
	if err != nil || !strings.Contains(r, "loaded the KV cache of") {
		t.Fatalf("/kv load: %q %v", r, err)
	}
	b.msgs = slices.Clone(a.msgs)
	turn(t, b, "Tell me another one.")
	if st := b.Poll().Stats; st.ReusedTokens < len(a.lastIDs) {
		t.Errorf("reused %d of %d tokens after /kv load; want at least the first prompt's %d", st.ReusedTokens, st.PromptTokens, len(a.lastIDs))
	}
	if _, _, err := b.Command("/kv load " + file + ".missing"); err == nil {
		t.Error("/kv load of a missing file succeeded")
	}
	os.WriteFile(file, []byte("not a KV file"), 0o644)
	if _, _, err := b.Command("/kv load " + file); err == nil || !strings.Contains(err.Error(), "not a KV cache file") {
		t.Errorf("/kv load of junk: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo.kv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	err = testmodels.Bounded(t, "/kv load FIFO", func() error {
		_, _, err := b.Command("/kv load " + fifo)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("/kv load of a FIFO: %v", err)
	}
	// /kv save over a FIFO (or /dev/null, as root) replaced it with the
	// file renamed into place; over a folder it failed in the rename.
	for _, to := range []string{fifo, t.TempDir()} {
		if _, _, err := b.Command("/kv save " + to); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/kv save %s: %v", to, err)
		}
	}
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("/kv save replaced the FIFO: %v", err)
	}
}

// /draft FILE, /draft off and /model FILE mid-session: the conversation
// stays; greedy output is the target's with or without the draft model.
func TestDraftAndModelMidSession(t *testing.T) {
	tiny := testmodels.Path(t, "course/tiny.pt")
	other := testmodels.Path(t, "embed/student-chat.pt")
	v := testSettings("chat", 30, sampler.Params{Greedy: true})
	s, err := New(sharedModel(t), Options{Settings: v, Open: load.Open})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turn(t, s, "Tell me a story about a cat.")
	plain := s.Messages()[1].Content
	if _, r, err := s.Command("/draft " + tiny); err != nil || !strings.Contains(r, "tiny.pt") {
		t.Fatalf("/draft: %q %v", r, err)
	}
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if res.Text != plain || res.Stats.Spec.Method != speculative.Draft || res.Stats.Spec.Proposed == 0 {
		t.Errorf("with the draft model: %q (%v); want the plain greedy reply", res.Text, res.Stats.Spec.Method)
	}
	if _, _, err := s.Command("/draft off"); err != nil || s.Speculation().Method != speculative.Off || s.DraftName() != "" {
		t.Errorf("/draft off: %v", err)
	}
	if _, _, err := s.Command("/draft " + filepath.Join(t.TempDir(), "none.pt")); err == nil {
		t.Error("/draft of a missing file succeeded")
	}
	if _, r, err := s.Command("/model " + other); err != nil || !strings.Contains(r, "student-chat.pt") {
		t.Fatalf("/model: %q %v", r, err)
	}
	turn(t, s, "Tell me a story about a dog.")
	if s.Info().Model != "student-chat.pt" || len(s.Messages()) != 4 || !equal(s.LastPrompt(), s.tmpl.Render(s.msgs[:3], true)) {
		t.Errorf("after /model: %s, %d messages", s.Info().Model, len(s.Messages()))
	}
}

// An empty raw prompt (chat --prompt "") continues from the start of a
// text: after the course's end-of-text separator, which has no BOS.
func TestEmptyRawPrompt(t *testing.T) {
	s := greedy(t, sharedModel(t), "raw", 5)
	if err := s.Send(""); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); !equal(s.LastPrompt(), []int{4095}) || len(res.IDs) != 5 {
		t.Errorf("prompt %v, %d ids", s.LastPrompt(), len(res.IDs))
	}
}

// After a weight switch (F11) the state said "re-prefilling (int8)" for
// the whole next reply, not only its prefill: the hint line showed it
// instead of "step mode · Alt+. next token", so a reply waiting in step
// mode gave no word of the key it waited for. The status ends with the
// prefill.
func TestReprefillStatusEndsWithThePrefill(t *testing.T) {
	v := testSettings("chat", 8, sampler.Params{Temperature: 0.8, Seed: 3})
	v.Step, v.ViewNext = true, true
	s, err := New(embedded(t), Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetQuant("int8"); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); !strings.Contains(st, "re-prefill") {
		t.Fatalf("status after the switch: %q", st)
	}
	if err := s.Send("Tell me a story."); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, s, func(u Update) bool { return u.Preview != nil }) // prefilled, waiting for the first step
	if st := s.Status(); st != "" {
		t.Errorf("status of a prefilled reply waiting in step mode: %q", st)
	}
	v = s.Settings()
	v.Step = false
	if err := s.Apply(v); err != nil {
		t.Fatal(err)
	}
	s.Wait()
}

// Bug: F11 on a Q4_K_M model said "state running quant" for 6 seconds (the
// 1B file read again for float weights it does not have), and then that it
// is already Q4_K_M. A model whose file is not float is refused at once.
func TestQuantOfAQuantizedFileIsRefusedAtOnce(t *testing.T) {
	q, err := embedded(t).(models.Quantizer).Quantize("q8_0") // stands for a q8_0 file
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	open := func(string) (models.Model, error) { opened++; return embedded(t), nil }
	s, err := New(q, Options{Settings: testSettings("chat", 8, sampler.Params{}), Open: open})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.SetQuant("int8")
	if err == nil || opened != 0 || !strings.Contains(err.Error(), "is q8_0 in its file: another weight format is made from a float file") {
		t.Errorf("int8 from a q8_0 file: %v, file opened %d times; want a refusal without opening it", err, opened)
	}
	if err := s.SetQuant("q8_0"); err != nil || s.Quant() != "q8_0" {
		t.Errorf("q8_0 on a q8_0 file: %v, %s", err, s.Quant())
	}
}

// Bug: --ignore-eos was dropped in chat mode (the reply ended at the end of
// turn), while chat serve's ignore_eos, as vLLM's, runs a chat reply to its
// budget: benchmarks of the two differed.
func TestIgnoreEOSInChatMode(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		v := testSettings("chat", 300, sampler.Params{Temperature: 0.8, Seed: 1})
		v.IgnoreEOS = ignore
		s, err := New(embedded(t), Options{Settings: v})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send("Tell me a story."); err != nil {
			t.Fatal(err)
		}
		res := s.Wait()
		s.Close()
		if want := map[bool]string{false: "eot", true: "length"}[ignore]; res.Reason != want || ignore && len(res.IDs) != 300 {
			t.Errorf("ignore_eos %v: ended %s after %d ids; want %s", ignore, res.Reason, len(res.IDs), want)
		}
	}
}

// A reply stopped before its first token left an empty assistant turn: in
// the conversation, in the next prompt (an empty reply the model was shown
// as its own) and in the saved session. Now, as ollama drops a cancelled
// reply, the user's message stays unanswered, and regenerate answers it.
// Step mode holds the reply before its first token, so Stop always comes
// first.
func TestStopBeforeFirstTokenLeavesNoEmptyTurn(t *testing.T) {
	s, st := stored(t, embedded(t), 20)
	s.vals.Step = true
	if err := s.Send("Hello."); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if res := s.Wait(); res.Reason != "stopped" || res.Text != "" {
		t.Fatalf("stopped in step mode before a step: reason %q, text %q", res.Reason, res.Text)
	}
	if msgs := s.Messages(); len(msgs) != 1 || msgs[0].Role != User {
		t.Errorf("after a reply stopped before its first token: %+v, want the user's message alone", msgs)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("%d saved sessions, %v", len(list), err)
	}
	if r, _ := st.Load(list[0].ID); len(r.Messages) != 1 || r.Messages[0].Role != "user" {
		t.Errorf("saved %+v, want the user's message alone", r.Messages)
	}
	s.vals.Step = false
	turn(t, s, "Tell me a story.")
	want := s.tmpl.Render([]Message{{Role: User, Content: "Hello."}, {Role: User, Content: "Tell me a story."}}, true)
	if !slices.Equal(s.LastPrompt(), want) {
		t.Errorf("the next prompt is not the two messages:\n%q\nwant\n%q", s.model.Tokenizer().Decode(s.LastPrompt()), s.model.Tokenizer().Decode(want))
	}

	// Regenerate answers a message whose reply was stopped before a token.
	s.vals.Step = true
	if err := s.Send("And another."); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Wait()
	s.vals.Step = false
	if err := s.Regenerate(); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	msgs := s.Messages()
	if n := len(msgs); n != 5 || msgs[n-2].Content != "And another." || msgs[n-1].Role != Assistant || msgs[n-1].Content == "" {
		t.Errorf("after regenerate: %+v", msgs)
	}
}

// chat --remote on a server that goes silent in the middle of a reply (no
// byte, the connection open) waited until Ctrl+C. After the reply's silence
// bound (remote.ReplySilence, shortened here) the reply ends with one line
// naming the server and the silence, and keeps the text so far. The
// server sends one piece and then nothing, so the bound can only go off
// after it, however slow the host.
func TestRemoteSilenceEndsTheReply(t *testing.T) {
	left := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"Once upon"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent until the client goes
		close(left)
	}))
	defer ts.Close()
	v := settings.Defaults("chat")
	v.Mode = "chat"
	s, err := NewRemote(RemoteOptions{URL: ts.URL, Silence: 50 * time.Millisecond}, Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send("Tell me a story."); err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	testmodels.Bounded(t, "a reply from a silent server", func() error { res = s.Wait(); return nil })
	if res.Reason != engine.ReasonError || res.Text != "Once upon" || res.Err == nil ||
		!strings.Contains(res.Err.Error(), ts.URL+" sent nothing for 0.05 s mid-reply") || strings.Contains(res.Err.Error(), "\n") {
		t.Errorf("after the server went silent: reason %q, text %q, err %v", res.Reason, res.Text, res.Err)
	}
	if msgs := s.Messages(); len(msgs) != 2 || msgs[1].Content != "Once upon" {
		t.Errorf("the text so far is not kept: %+v", msgs)
	}
	testmodels.Bounded(t, "the request's end at the server", func() error { <-left; return nil })
}
