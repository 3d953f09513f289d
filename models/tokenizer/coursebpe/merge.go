package coursebpe

import "math"

// heapThreshold is the chunk length (bytes) from which mergeChunk uses the
// O(n log n) heap instead of rescanning the chunk after every merge. A
// variable so tests can force either path.
var heapThreshold = 48

// mergeChunk appends the ids of chunk to dst. The result is what the course's
// _encode_chunk gives: repeatedly take the pair with the lowest rank and
// replace all its non-overlapping occurrences, left to right.
func (t *Tokenizer) mergeChunk(dst []int, chunk string) []int {
	if t.byBytes != nil {
		return t.rankMerge(dst, chunk, math.MaxInt32)
	}
	if len(chunk) >= heapThreshold {
		return t.mergeHeap(dst, chunk)
	}
	start := len(dst)
	for i := 0; i < len(chunk); i++ {
		dst = append(dst, int(chunk[i]))
	}
	ids := dst[start:]
	for len(ids) >= 2 {
		best, bestRank := -1, int32(0)
		for i := 0; i+1 < len(ids); i++ {
			if r, ok := t.ranks[pairKey(ids[i], ids[i+1])]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		a, b, id := ids[best], ids[best+1], 256+int(bestRank)
		w := best
		for i := best; i < len(ids); {
			if i+1 < len(ids) && ids[i] == a && ids[i+1] == b {
				ids[w] = id
				i += 2
			} else {
				ids[w] = ids[i]
				i++
			}
			w++
		}
		ids = ids[:w]
	}
	return dst[:start+len(ids)]
}

// mergeHeap is mergeChunk with a linked list and a min-heap of (rank,
// position). It gives the same result: a merge of rank r only creates pairs
// of rank > r (merge r uses ids below 256+r, checked in New), so all
// occurrences of rank r are popped before any later rank, in left-to-right
// order; entries made stale by an earlier merge are skipped.
func (t *Tokenizer) mergeHeap(dst []int, chunk string) []int {
	n := len(chunk)
	if n == 0 {
		return dst
	}
	tok := make([]int, n)
	next := make([]int32, n) // -1 at the end
	prev := make([]int32, n) // -1 at the start
	h := make(pairHeap, 0, n)
	for i := range n {
		tok[i] = int(chunk[i])
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		if r, ok := t.ranks[pairKey(tok[i], tok[i+1])]; ok {
			h = append(h, uint64(r)<<32|uint64(i))
		}
	}
	h.init()
	for len(h) > 0 {
		e := h.pop()
		r, i := int32(e>>32), int32(uint32(e))
		j := next[i]
		if tok[i] < 0 || j < 0 {
			continue
		}
		if cur, ok := t.ranks[pairKey(tok[i], tok[j])]; !ok || cur != r {
			continue // stale
		}
		tok[i] = 256 + int(r)
		tok[j] = -1 // removed
		k := next[j]
		next[i] = k
		if k >= 0 {
			prev[k] = i
			if nr, ok := t.ranks[pairKey(tok[i], tok[k])]; ok {
				h.push(uint64(nr)<<32 | uint64(i))
			}
		}
		if p := prev[i]; p >= 0 {
			if nr, ok := t.ranks[pairKey(tok[p], tok[i])]; ok {
				h.push(uint64(nr)<<32 | uint64(p))
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		dst = append(dst, tok[i])
	}
	return dst
}

// pairHeap is a binary min-heap of rank<<32|position.
type pairHeap []uint64

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(x uint64) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *pairHeap) pop() uint64 {
	s := *h
	x := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return x
}

func (h pairHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
