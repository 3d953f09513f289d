package models

import "fmt"

// Batch is a flattened batch of tokens from several sequences, the way
// vLLM's scheduler output and llama.cpp's llama_batch are: token i is fed
// at position Pos[i] of sequence Seq[i] (an index into the KV handles passed
// with the batch), and its logits are returned when Logits[i] is set. A
// prefill chunk, a single decode token and a speculative draft to verify are
// all just runs of tokens; a sequence's tokens must continue its cache (the
// first at KV.Len(), the next one after it, in batch order).
type Batch struct {
	Tokens []int
	Pos    []int
	Seq    []int
	Logits []bool
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.Tokens, b.Pos, b.Seq, b.Logits = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
}

// Add appends one token.
func (b *Batch) Add(seq, pos, token int, logits bool) {
	b.Tokens = append(b.Tokens, token)
	b.Pos = append(b.Pos, pos)
	b.Seq = append(b.Seq, seq)
	b.Logits = append(b.Logits, logits)
}

// AddRun appends tokens of sequence seq at positions pos.., asking for the
// logits of the last rows of them.
func (b *Batch) AddRun(seq, pos int, tokens []int, rows int) {
	for i, t := range tokens {
		b.Add(seq, pos+i, t, i >= len(tokens)-rows)
	}
}

// Len is the number of tokens.
func (b *Batch) Len() int { return len(b.Tokens) }

// Rows is the number of logits rows the batch asks for.
func (b *Batch) Rows() int {
	n := 0
	for _, l := range b.Logits {
		if l {
			n++
		}
	}
	return n
}

// Reserve checks that b's tokens name sequences of kv and continue them
// (each sequence's first token at its KV.Len(), the next after it, in batch
// order) within KV.Cap(), then makes the new positions writable
// (KV.Append). On error no KV handle has changed. count is scratch, grown
// as needed and returned: the tokens of each sequence in the batch.
func (b *Batch) Reserve(kv []KV, count []int) ([]int, error) {
	if cap(count) < len(kv) {
		count = make([]int, len(kv))
	}
	count = count[:len(kv)]
	clear(count)
	for i, s := range b.Seq {
		if s < 0 || s >= len(kv) || kv[s] == nil {
			return count, fmt.Errorf("token %d names sequence %d of %d", i, s, len(kv))
		}
		if want := kv[s].Len() + count[s]; b.Pos[i] != want {
			return count, fmt.Errorf("token %d of sequence %d is at position %d; the sequence continues at %d", i, s, b.Pos[i], want)
		}
		count[s]++
	}
	for s, c := range count {
		if c > 0 && kv[s].Len()+c > kv[s].Cap() {
			return count, fmt.Errorf("%d more positions do not fit sequence %d (%d of %d used)", c, s, kv[s].Len(), kv[s].Cap())
		}
	}
	for s, n := range count {
		if n == 0 {
			continue
		}
		if err := kv[s].Append(n); err != nil {
			for s2 := range s {
				if count[s2] > 0 {
					kv[s2].Truncate(kv[s2].Len() - count[s2])
				}
			}
			return count, fmt.Errorf("sequence %d: %w", s, err)
		}
	}
	return count, nil
}
