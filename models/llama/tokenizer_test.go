package llama

import (
	"slices"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
)

// gemmaVocab makes the synthetic SPM vocabulary Gemma-like: its last two
// tokens become the control tokens <start_of_turn> and <end_of_turn>.
func gemmaVocab(eotID int) func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
	return func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		for i, kv := range meta {
			switch kv.Key {
			case "tokenizer.ggml.tokens":
				toks := slices.Clone(kv.Value.(gguf.ArrayValue).Data.([]string))
				toks[262], toks[263] = "<start_of_turn>", "<end_of_turn>"
				meta[i].Value = gguf.ArrayValue{Elem: gguf.String, Data: toks}
			case "tokenizer.ggml.token_type":
				types := slices.Clone(kv.Value.(gguf.ArrayValue).Data.([]int32))
				types[262], types[263] = 3, 3
				meta[i].Value = gguf.ArrayValue{Elem: gguf.Int32, Data: types}
			}
		}
		meta = setKV(meta, gguf.KV{Key: "tokenizer.chat_template", Type: gguf.String, Value: "{{ '<start_of_turn>' }}"})
		if eotID >= 0 {
			meta = setKV(meta, gguf.KV{Key: "tokenizer.ggml.eot_token_id", Type: gguf.Uint32, Value: uint32(eotID)})
		}
		return meta, ts
	}
}

type eogTokenizer interface {
	EOT() int
	EOG() []int
	IsEOG(int) bool
}

// TestSPMEndOfTurn: a SentencePiece vocabulary without eot_token_id gets
// llama.cpp's text-found EOT (<end_of_turn> for Gemma) and an EOG set with
// EOS too; a named eot_token_id wins. The chat template is in GGUF().
func TestSPMEndOfTurn(t *testing.T) {
	m := loadT(t, writeSpec(t, archSpec("llama", gguf.TypeF32), gemmaVocab(-1)))
	tok, ok := m.Tokenizer().(eogTokenizer)
	if !ok {
		t.Fatalf("tokenizer %T has no EOG", m.Tokenizer())
	}
	if tok.EOT() != 263 || !slices.Equal(tok.EOG(), []int{2, 263}) || !tok.IsEOG(2) || tok.IsEOG(262) {
		t.Errorf("EOT %d, EOG %v", tok.EOT(), tok.EOG())
	}
	if got := m.Tokenizer().EncodeSpecial("<end_of_turn>"); !slices.Equal(got, []int{263}) {
		t.Errorf("EncodeSpecial(<end_of_turn>) = %v", got)
	}
	if tmpl, _ := m.GGUF().String("tokenizer.chat_template"); tmpl == "" {
		t.Error("chat template not reachable through GGUF()")
	}
	if !m.StripsLeadingSpace() {
		t.Error("the SPM wrapper hides StripsLeadingSpace")
	}
	named := loadT(t, writeSpec(t, archSpec("llama", gguf.TypeF32), gemmaVocab(262)))
	if tok := named.Tokenizer().(eogTokenizer); tok.EOT() != 262 || !slices.Equal(tok.EOG(), []int{2, 262, 263}) {
		t.Errorf("named EOT: %d, EOG %v", tok.EOT(), tok.EOG())
	}
	// Without any such token EOT is EOS.
	plain := loadT(t, writeSpec(t, archSpec("llama", gguf.TypeF32), nil))
	if tok := plain.Tokenizer().(eogTokenizer); tok.EOT() != 2 || !slices.Equal(tok.EOG(), []int{2}) {
		t.Errorf("plain: EOT %d, EOG %v", tok.EOT(), tok.EOG())
	}
}

// TestRealVocabEndOfTurn loads models with real vocabularies: Llama 3's
// EOT is <|eot_id|> and generation also ends at <|end_of_text|>; Phi-3's
// (SentencePiece) EOT is <|end|>, and <|endoftext|> ends generation too.
func TestRealVocabEndOfTurn(t *testing.T) {
	for _, c := range []struct{ vocab, spec, eot, other string }{
		{"ggml-vocab-llama-bpe.gguf", "llama3", "<|eot_id|>", "<|end_of_text|>"},
		{"ggml-vocab-phi-3.gguf", "llama", "<|end|>", "<|endoftext|>"},
	} {
		vocab, err := gguf.Open(testmodels.Path(t, "vocab/"+c.vocab))
		if err != nil {
			t.Fatal(err)
		}
		path := writeSpec(t, archSpec(c.spec, gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			var out []gguf.KV
			for _, kv := range meta {
				if !strings.HasPrefix(kv.Key, "tokenizer.") {
					out = append(out, kv)
				}
			}
			n := 0
			for _, kv := range vocab.KV {
				if strings.HasPrefix(kv.Key, "tokenizer.") {
					out = append(out, kv)
				}
				if kv.Key == "tokenizer.ggml.tokens" {
					n = kv.Value.(gguf.ArrayValue).Len()
				}
			}
			// A zero embedding of the vocabulary's size, tied to the output.
			ts = slices.DeleteFunc(ts, func(w gguf.WriteTensor) bool { return w.Name == "output.weight" })
			for i := range ts {
				if ts[i].Name == "token_embd.weight" {
					ts[i].Dims[1] = int64(n)
					ts[i].Data = make([]float32, int(ts[i].Dims[0])*n)
				}
			}
			return out, ts
		})
		vocab.Close()
		m := loadT(t, path)
		tok := m.Tokenizer().(eogTokenizer)
		eot := m.Tokenizer().EncodeSpecial(c.eot)
		other := m.Tokenizer().EncodeSpecial(c.other)
		if len(eot) != 1 || len(other) != 1 || tok.EOT() != eot[0] || !tok.IsEOG(other[0]) || !tok.IsEOG(eot[0]) {
			t.Errorf("%s: EOT %d (%s %v), EOG %v (%s %v)", c.vocab, tok.EOT(), c.eot, eot, tok.EOG(), c.other, other)
		}
	}
}
