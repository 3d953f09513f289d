package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models"
	"chat/models/kvcache"
	"chat/models/load"
)

func TestRunEmbedded(t *testing.T) {
	m, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(m, Fallback, 1, 16, 8, 1, kvcache.F32)
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != "chat" || r.PromptTokens != 16 || r.GenTokens != 8 || r.PPTokS <= 0 || r.TGTokS <= 0 || r.Batch != 1 || r.ISA == "" || r.KV != "f32" {
		t.Errorf("result %+v", r)
	}
	for _, kv := range []kvcache.Format{kvcache.Int8, kvcache.FP8, kvcache.Int4} {
		if r, err := Run(m, Fallback, 1, 16, 8, 2, kv); err != nil || r.KV != kv.String() || r.TGTokS <= 0 {
			t.Errorf("%v KV: %+v, %v", kv, r, err)
		}
	}
	r, err = Run(m, Fallback, 1, 16, 8, 3, kvcache.F32)
	if err != nil {
		t.Fatal(err)
	}
	if r.Batch != 3 || r.TGTokSSingle <= 0 || r.BatchSpeedup <= 0 || r.RolloutSpeedup <= 0 {
		t.Errorf("batch result %+v", r)
	}
	if _, err := Run(m, Fallback, 1, m.Info().ContextLength-6, 10, 1, kvcache.F32); err == nil {
		t.Error("a run longer than the context should fail")
	}
}

func TestPromptTokens(t *testing.T) {
	m, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	ids := promptTokens1(m.Tokenizer(), "ab", 7)
	if len(ids) != 7 {
		t.Fatalf("got %d ids, want 7", len(ids))
	}
}

// widest records the most tokens one Forward of its runners was given.
type widest struct {
	models.Model
	most *int
}

func (w widest) NewRunner() models.Runner { return widestRunner{w.Model.NewRunner(), w.most} }

type widestRunner struct {
	models.Runner
	most *int
}

func (r widestRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	*r.most = max(*r.most, b.Len())
	return r.Runner.Forward(b, kv)
}

// A batch's prompts are prefilled in passes of at most maxPrefillTokens:
// --batch 2000 of 128-token prompts was one pass of 256,000 tokens, whose
// activations took 5 GB on a 15M model.
func TestPrefillPassesBounded(t *testing.T) {
	m, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	r, err := Run(widest{m, &most}, Fallback, 1, 120, 2, 40, kvcache.F32)
	if err != nil || r.PPTokS <= 0 {
		t.Fatalf("%+v, %v", r, err)
	}
	if most > maxPrefillTokens || most < maxPrefillTokens/2 {
		t.Errorf("the widest pass had %d tokens; want at most %d (40 prompts of 120: 4800)", most, maxPrefillTokens)
	}
}

// TestNeedText: a text that calibrates or measures is a file or the shared
// sample, never Fallback's two sentences (chat bench --quant with a
// calibrated format took them silently); a benchmark's prompt may be them.
func TestNeedText(t *testing.T) {
	t.Setenv("CHAT_SHARED_MODELS", t.TempDir()) // no shared text there
	if PromptText() != Fallback {
		t.Skip("the shared text is found beside the package: Fallback cannot be forced")
	}
	if s, err := ReadText(""); s != Fallback || err != nil {
		t.Errorf("ReadText(\"\") = %.20q, %v; want Fallback", s, err)
	}
	if _, err := NeedText("", "--calib"); err == nil || !strings.Contains(err.Error(), "--calib FILE") {
		t.Errorf("NeedText without a text: %v, want an error naming --calib FILE", err)
	}
	file := filepath.Join(t.TempDir(), "t.txt")
	os.WriteFile(file, []byte("Once upon a time."), 0o644)
	for _, read := range []func(string) (string, error){ReadText, func(f string) (string, error) { return NeedText(f, "--text") }} {
		if s, err := read(file); s != "Once upon a time." || err != nil {
			t.Errorf("a file: %q, %v", s, err)
		}
	}
}

// Run from another folder, `chat prune` said "the shared TinyStories sample
// is not there" without saying where it had looked: the message names the
// file and both places, so the user knows what to set or which flag to give.
func TestNeedTextSaysWhereItLooked(t *testing.T) {
	t.Setenv("CHAT_SHARED_MODELS", t.TempDir())
	t.Chdir(t.TempDir())
	_, err := NeedText("", "--calib")
	want := "no text found: the default, text/TinyStories-valid-head.txt, is neither under $CHAT_SHARED_MODELS nor under ../shared/models from this folder: give one with --calib FILE"
	if err == nil || err.Error() != want {
		t.Fatalf("NeedText: %v; want %q", err, want)
	}
}
