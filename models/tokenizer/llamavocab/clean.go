package llamavocab

// CleanSpaces is clean_up_tokenization_spaces as llama_vocab::impl::detokenize
// does it, compacting in place like the original so that each pass sees
// the same bytes: drop the space before ? ! . , and before 's 'm 're 've, and the
// spaces around a lone apostrophe.
func CleanSpaces(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	out := b[:1]
	for i := 1; i < len(b); i++ {
		if b[i-1] == ' ' && (b[i] == '?' || b[i] == '!' || b[i] == '.' || b[i] == ',') {
			out = out[:len(out)-1]
		}
		out = append(out, b[i])
	}
	b = out
	out = b[:1]
	for i := 1; i < len(b); i++ {
		x := b[i]
		if x == '\'' && i+1 < len(b) && b[i-1] == ' ' && b[i+1] == ' ' {
			out = out[:len(out)-1]
			i++
			b[i] = 0 // the space after it is dropped, and no longer a space
		}
		out = append(out, x)
	}
	b = out
	out = b[:1]
	for i := 1; i < len(b); i++ {
		x := b[i]
		if b[i-1] == ' ' && x == '\'' && i+1 < len(b) {
			x1 := b[i+1]
			if x1 == 's' || x1 == 'm' {
				out = out[:len(out)-1]
			} else if i+2 < len(b) {
				x2 := b[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					out = out[:len(out)-1]
				}
			}
		}
		out = append(out, x)
	}
	return out
}
