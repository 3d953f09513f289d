package convert

import (
	"fmt"

	"chat/models/course"
	"chat/models/gguf"
	"chat/models/quote"
	"chat/models/tokenizer/coursebpe"
	"chat/models/tokenizer/gpt2bpe"
)

// The course tokenizer is byte-level BPE (ids 0..255 are the bytes, merge r
// makes id 256+r, then the special tokens), so it is written as a "gpt2"
// vocabulary: each token's bytes spelled in GPT-2's byte alphabet, the
// merges in rank order, <|endoftext|> a control token. The split pattern
// picks llama.cpp's pre-tokenizer: the course's GPT-4 pattern is the
// Llama 3 regex (case-insensitive contractions; \s*[\r\n] and \s*[\r\n]+
// end at the same place), which "dbrx" names without Llama 3's
// ignore_merges (a word found whole in the vocabulary would skip the
// merges, which the course never does); the GPT-2 pattern is "gpt-2".
// The one difference left is U+017F (ſ): the course's (?i) folds it to s in
// a contraction, llama.cpp's [sS] does not.

// preTokenizers maps a course split pattern to llama.cpp's name for it.
var preTokenizers = map[string]string{
	coursebpe.GPT4SplitPattern:         "dbrx",
	coursebpe.GPT2SplitPattern:         "gpt-2",
	coursebpe.GPT2TiktokenSplitPattern: "gpt-2",
}

// The course's chat template (course-format §6) in Jinja: every message is
// "<|role|>\n" + content + <|endoftext|>, and the generation prompt is
// "<|assistant|>\n". Only <|endoftext|> is a special token.
const courseChatTemplate = "{% for message in messages %}" +
	"{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|endoftext|>' }}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"

// courseVocab is the tokenizer metadata of a course model.
func courseVocab(m *course.Model) ([]gguf.KV, error) {
	tok, ok := m.Tokenizer().(*coursebpe.Tokenizer)
	if !ok {
		return nil, fmt.Errorf("convert: the model's tokenizer is not the course's BPE")
	}
	pre, ok := preTokenizers[tok.Pattern()]
	if !ok {
		return nil, fmt.Errorf("convert: the tokenizer's split pattern %s is not one llama.cpp's pre-tokenizers reproduce", quote.Quote(tok.Pattern()))
	}
	vocab := m.Info().VocabSize
	if tok.Size() > vocab {
		return nil, fmt.Errorf("convert: the tokenizer has %d ids, the model %d", tok.Size(), vocab)
	}
	tokens := make([]string, vocab)
	types := make([]int32, vocab)
	seen := make(map[string]int, vocab)
	for id := range vocab {
		switch {
		case id >= tok.Size(): // rows the model has beyond the tokenizer
			tokens[id], types[id] = fmt.Sprintf("[PAD%d]", id), gpt2bpe.TypeUnused
		case tok.IsSpecial(id):
			tokens[id], types[id] = string(tok.TokenBytes(id)), gpt2bpe.TypeControl
		default:
			tokens[id], types[id] = gpt2bpe.ByteText(tok.TokenBytes(id)), gpt2bpe.TypeNormal
		}
		if prev, dup := seen[tokens[id]]; dup {
			// llama.cpp keeps one id per text; the course could emit both.
			return nil, fmt.Errorf("convert: tokens %d and %d have the same text %s; llama.cpp cannot tell them apart", prev, id, quote.Quote(tokens[id]))
		}
		seen[tokens[id]] = id
	}
	merges := make([]string, tok.Merges())
	for r := range merges {
		a, b := tok.Merge(r)
		merges[r] = tokens[a] + " " + tokens[b]
	}
	eot := tok.EOT()
	meta := []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Type: gguf.String, Value: pre},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: tokens}},
		{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
		{Key: "tokenizer.ggml.merges", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: merges}},
		{Key: "tokenizer.ggml.add_bos_token", Type: gguf.Bool, Value: false},
		{Key: "tokenizer.ggml.add_eos_token", Type: gguf.Bool, Value: false},
	}
	if eot >= 0 {
		// <|endoftext|> ends a text and a turn; GPT-2 names it BOS too.
		for _, k := range []string{"bos_token_id", "eos_token_id", "eot_token_id"} {
			meta = append(meta, gguf.KV{Key: "tokenizer.ggml." + k, Type: gguf.Uint32, Value: uint32(eot)})
		}
		if m.Info().ChatTuned() { // a base model was never taught the turns
			meta = append(meta, gguf.KV{Key: "tokenizer.chat_template", Type: gguf.String, Value: courseChatTemplate})
		}
	}
	return meta, nil
}
