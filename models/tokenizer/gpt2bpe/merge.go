package gpt2bpe

import (
	"container/heap"
	"fmt"
	"unicode/utf8"
)

// mergeTable holds the BPE merges with each string that takes part in one
// named by an integer, so that the merge loop compares integers and finds a
// pair's rank in a map keyed by two of them. A string's integer is its token
// id; the rare part or result that is no token gets one past the vocabulary.
type mergeTable struct {
	ids   map[string]int   // the vocabulary's, shared
	extra map[string]int32 // only while building
	n     int32            // vocabulary size
	ranks map[uint64]merge // left<<32 | right
	// single[b] is the integer of byte b's alphabet character, or -1.
	single [256]int32
}

type merge struct {
	rank   int32
	result int32 // left+right
}

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// minExtraLimit is the fewest strings outside the vocabulary the merges
// may name; the limit is the vocabulary's size when that is larger. Real
// vocabularies name none, while each costs about 100 bytes to build: 4M
// merges of three new strings each took 1.1 GB, ten times their file size.
const minExtraLimit = 1 << 16

// id names s, adding it when add is set; -1 when it is unknown.
func (m *mergeTable) id(s []byte, add bool) int32 {
	if id, ok := m.ids[string(s)]; ok {
		return int32(id)
	}
	if id, ok := m.extra[string(s)]; ok {
		return id
	}
	if !add {
		return -1
	}
	id := m.n + int32(len(m.extra))
	m.extra[string(s)] = id
	return id
}

// newMergeTable reads "left right" merge strings, rank = index. As in
// llama_vocab::impl::load, the split is at the first space after the first
// byte and the first of duplicate pairs wins; an entry without a space (or
// with an empty side) can never apply and is skipped.
func newMergeTable(merges []string, ids map[string]int) (*mergeTable, error) {
	// Room for a rank per token at most: a real vocabulary has about as
	// many merges as tokens (Llama 3's 280K for 128K tokens), and a merge
	// repeated millions of times (4 bytes and a length in the file) made
	// room for as many ranks, 28 bytes each, to keep one.
	m := &mergeTable{ids: ids, extra: map[string]int32{}, n: int32(len(ids)), ranks: make(map[uint64]merge, min(len(merges), len(ids)))}
	limit := max(len(ids), minExtraLimit)
	var buf []byte
	for i, s := range merges {
		if len(m.extra) > limit {
			return nil, fmt.Errorf("gpt2bpe: the merges name more than %d strings that are not tokens", limit)
		}
		pos := -1
		for j := 1; j < len(s); j++ {
			if s[j] == ' ' {
				pos = j
				break
			}
		}
		if pos < 0 || pos+1 >= len(s) {
			continue
		}
		buf = append(append(buf[:0], s[:pos]...), s[pos+1:]...)
		l, r := m.id(buf[:pos], true), m.id(buf[pos:], true)
		k := pairKey(l, r)
		if _, dup := m.ranks[k]; dup {
			continue
		}
		m.ranks[k] = merge{rank: int32(i), result: m.id(buf, true)}
	}
	for b := range m.single {
		m.single[b] = m.id([]byte(string(byteRune[b])), false)
	}
	m.extra = nil // encoding needs only the integers
	return m, nil
}

// symbol is a run of the word in the merge's linked list.
type symbol struct {
	prev, next int
	start, end int   // bytes of the byte-level word; start == end once merged away
	id         int32 // interned text, or -1 when no merge mentions it
}

type bigram struct {
	left, right int
	lid, rid    int32
	rank        int32
	result      int32
}

// bigramQueue pops the lowest rank first and, on ties, the leftmost pair
// (llm_bigram_bpe::comparator).
type bigramQueue []bigram

func (q bigramQueue) Len() int { return len(q) }
func (q bigramQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}
func (q bigramQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bigramQueue) Push(x any)   { *q = append(*q, x.(bigram)) }
func (q *bigramQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// word runs BPE on one byte-level word as llm_tokenizer_bpe_session does:
// start from its characters, merge the adjacent pair of lowest rank until
// none is left, then emit each symbol's token, or the tokens of its single
// bytes when it has none.
func (t *Tokenizer) word(w string, out []int) []int {
	if w == "" {
		return out
	}
	if t.ignoreMerges {
		if id, ok := t.ids[w]; ok {
			return append(out, id)
		}
	}
	m := t.merges
	syms := make([]symbol, 0, len(w))
	for off := 0; off < len(w); {
		r, n := utf8.DecodeRuneInString(w[off:])
		id := int32(-1)
		if b, ok := alphabetByte(r); ok {
			id = m.single[b]
		}
		syms = append(syms, symbol{prev: len(syms) - 1, next: len(syms) + 1, start: off, end: off + n, id: id})
		off += n
	}
	syms[len(syms)-1].next = -1

	var q bigramQueue
	add := func(l, r int) {
		if l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0 {
			return
		}
		if mg, ok := m.ranks[pairKey(syms[l].id, syms[r].id)]; ok {
			heap.Push(&q, bigram{left: l, right: r, lid: syms[l].id, rid: syms[r].id, rank: mg.rank, result: mg.result})
		}
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.Len() > 0 {
		b := heap.Pop(&q).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		// Outdated when either side changed since the pair was queued;
		// texts only grow, so equal ids mean equal texts (llama.cpp
		// compares the texts).
		if l.start == l.end || r.start == r.end || l.id != b.lid || r.id != b.rid {
			continue
		}
		l.end = r.end
		l.id = b.result
		r.start, r.end = 0, 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		add(l.prev, b.left)
		add(b.left, l.next)
	}
	for i := 0; i != -1; i = syms[i].next {
		s := w[syms[i].start:syms[i].end]
		if id, ok := t.ids[s]; ok {
			out = append(out, id)
			continue
		}
		// Not a token: llama.cpp tries each byte as a one-byte token text.
		for j := 0; j < len(s); j++ {
			if id, ok := t.ids[s[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}
