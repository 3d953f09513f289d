package llama

import (
	"fmt"
	"sort"

	"chat/models"
	"chat/models/gguf"
	"chat/models/quote"
	"chat/models/tokenizer/gpt2bpe"
	"chat/models/tokenizer/spm"
)

// loadTokenizer picks the tokenizer tokenizer.ggml.model names: "llama"
// (SentencePiece) or "gpt2" (byte-level BPE, as Llama 3 and Qwen use).
func loadTokenizer(f *gguf.File) (models.Tokenizer, error) {
	switch model, _ := f.String("tokenizer.ggml.model"); model {
	case "llama":
		t, err := spm.FromGGUF(f)
		if err != nil {
			return nil, err
		}
		return withTurnEnd(t, f.Has("tokenizer.ggml.eot_token_id")), nil
	case "gpt2":
		return gpt2bpe.FromGGUF(f)
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %s is not supported", quote.Quote(model))
	}
}

// spmTokenizer is a SentencePiece tokenizer with the end-of-turn and
// end-of-generation tokens llama.cpp's vocabulary loader finds by their
// text for every vocabulary type (llama_vocab::impl::load), so that, e.g.,
// Gemma's EOT is <end_of_turn> rather than <eos>. (The byte-level BPE
// tokenizer does this itself.)
type spmTokenizer struct {
	*spm.Tokenizer
	eot int
	eog []int // increasing
}

// EOT is tokenizer.ggml.eot_token_id, else the first token whose text
// llama.cpp takes for an end of turn, else EOS.
func (t *spmTokenizer) EOT() int { return t.eot }

// EOG lists the ids llama.cpp ends generation at: EOS, EOT and the tokens
// it recognises by text.
func (t *spmTokenizer) EOG() []int { return append([]int(nil), t.eog...) }

// IsEOG reports whether id is in EOG.
func (t *spmTokenizer) IsEOG(id int) bool {
	i := sort.SearchInts(t.eog, id)
	return i < len(t.eog) && t.eog[i] == id
}

// The texts of llama.cpp's EOT and EOG searches (src/llama-vocab.cpp);
// where several EOT texts are present the first listed wins.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
		"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
)

func withTurnEnd(t *spm.Tokenizer, hasEOT bool) *spmTokenizer {
	byText := map[string]int{}
	want := map[string]bool{}
	for _, s := range append(append([]string(nil), eotTexts...), eogTexts...) {
		want[s] = true
	}
	for id := 0; id < t.Size(); id++ {
		if s := t.Text(id); want[s] {
			if _, dup := byText[s]; !dup {
				byText[s] = id
			}
		}
	}
	w := &spmTokenizer{Tokenizer: t, eot: t.EOT()}
	if !hasEOT {
		for _, s := range eotTexts {
			if id, ok := byText[s]; ok {
				w.eot = id
				break
			}
		}
	}
	set := map[int]bool{}
	for _, id := range []int{t.EOS(), w.eot} {
		if id >= 0 {
			set[id] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := byText[s]; ok {
			set[id] = true
		}
	}
	for id := range set {
		w.eog = append(w.eog, id)
	}
	sort.Ints(w.eog)
	return w
}
