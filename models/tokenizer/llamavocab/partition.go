// Package llamavocab holds the parts of llama.cpp's llama_vocab that the GGUF
// tokenizers (SPM, GPT-2 BPE, WordPiece) share: splitting text around special
// tokens before encoding, and the detokenizer's text clean-up.
package llamavocab

// Partition is llama_vocab::impl::tokenizer_st_partition (lstrip/rstrip
// attributes are not in GGUF and are not applied).

import "strings"

// Fragment is a run of ordinary text (ID < 0) or one matched special token.
type Fragment struct {
	Text string
	ID   int
}

// Partition splits text around the tokens ids, each found by tokText(id), in
// the order given (llama.cpp tries the longest texts first). use, if not
// nil, picks which ids take part (control tokens only with parse_special).
func Partition(text string, ids []int, tokText func(int) string, use func(int) bool) []Fragment {
	if text == "" {
		return nil
	}
	frags := []Fragment{{Text: text, ID: -1}}
	for _, id := range ids {
		if use != nil && !use(id) {
			continue
		}
		tok := tokText(id)
		if tok == "" {
			continue
		}
		var next []Fragment
		changed := false
		for _, fr := range frags {
			if fr.ID >= 0 || !strings.Contains(fr.Text, tok) {
				next = append(next, fr)
				continue
			}
			changed = true
			s := fr.Text
			for {
				i := strings.Index(s, tok)
				if i < 0 {
					if s != "" {
						next = append(next, Fragment{Text: s, ID: -1})
					}
					break
				}
				if i > 0 {
					next = append(next, Fragment{Text: s[:i], ID: -1})
				}
				next = append(next, Fragment{ID: id})
				s = s[i+len(tok):]
			}
		}
		if changed {
			frags = next
		}
	}
	return frags
}
