package constrain

import (
	"bytes"
	"slices"

	"chat/models"
)

// Vocab is what constrained decoding needs of a tokenizer: the bytes each id
// stands for (models.Tokenizer.TokenBytes, exactly what the engine prints),
// which ids are special, and a byte trie of the ordinary ids, laid out in
// depth-first order so that the mask walk is one pass over an array that
// skips whole subtrees once the automaton is dead.
//
// Special ids (the tokenizer's IsSpecial: control, user-defined, unknown and
// unused tokens, the course's <|endoftext|> family; EOT and BOS when the
// tokenizer cannot say) and ids whose bytes are empty are never in the trie,
// so a constraint never allows them; the end ids are allowed separately, in
// accepting states only. SentencePiece byte-fallback tokens (<0x41>) are
// ordinary tokens with one byte, so a byte can be reached even when no
// other token holds it. Tokens holding part of a UTF-8 character are
// ordinary too: the automata work on bytes.
//
// A Vocab is immutable and safe for concurrent use.
type Vocab struct {
	size     int
	bytes    [][]byte
	special  []bool
	nodes    []trieNode
	toks     []int32 // ids, grouped by the node they end at
	maxDepth int
}

// trieNode is one byte of the trie. Its parent is the nearest earlier node
// with depth-1; its subtree is nodes[i+1 : end].
type trieNode struct {
	end   int32 // index of the first node after the subtree
	tok   int32 // first index in toks of the ids that end here
	ntok  int32
	depth int32 // 1 for a child of the root
	b     byte
}

// specials is the optional tokenizer method that tells special ids apart.
type specials interface{ IsSpecial(id int) bool }

// NewVocab reads tok's tokens. size is the number of ids the model scores
// (its logits row), which may differ from tok.Size(); ids the tokenizer does
// not know are never allowed.
func NewVocab(tok models.Tokenizer, size int) *Vocab {
	v := &Vocab{size: size, bytes: make([][]byte, size), special: make([]bool, size)}
	sp, hasSpecial := tok.(specials)
	type entry struct {
		b  []byte
		id int32
	}
	var ents []entry
	for id := range size {
		if id >= tok.Size() {
			v.special[id] = true
			continue
		}
		b := tok.TokenBytes(id)
		v.bytes[id] = b
		switch {
		case hasSpecial && sp.IsSpecial(id), !hasSpecial && (id == tok.EOT() || id == tok.BOS()):
			v.special[id] = true
		case len(b) > 0:
			ents = append(ents, entry{b, int32(id)})
		}
	}
	slices.SortFunc(ents, func(a, b entry) int {
		if c := bytes.Compare(a.b, b.b); c != 0 {
			return c
		}
		return int(a.id - b.id)
	})

	// Build the trie in depth-first order from the sorted strings: the path
	// of the previous string is kept on a stack; each string pops to the
	// common prefix and pushes the rest.
	var path []int32 // node index at each depth-1
	var prev []byte
	for _, e := range ents {
		lcp := 0
		for lcp < len(prev) && lcp < len(e.b) && prev[lcp] == e.b[lcp] {
			lcp++
		}
		for len(path) > lcp {
			v.nodes[path[len(path)-1]].end = int32(len(v.nodes))
			path = path[:len(path)-1]
		}
		for _, c := range e.b[lcp:] {
			path = append(path, int32(len(v.nodes)))
			v.nodes = append(v.nodes, trieNode{b: c, depth: int32(len(path))})
		}
		n := &v.nodes[path[len(path)-1]]
		if n.ntok == 0 {
			n.tok = int32(len(v.toks))
		}
		n.ntok++
		v.toks = append(v.toks, e.id)
		v.maxDepth = max(v.maxDepth, len(e.b))
		prev = e.b
	}
	for _, i := range path {
		v.nodes[i].end = int32(len(v.nodes))
	}
	return v
}

// Size is the number of ids (the length of a mask in bits).
func (v *Vocab) Size() int { return v.size }

// Words is the number of uint64 words of a mask.
func (v *Vocab) Words() int { return (v.size + 63) / 64 }

// Bytes is what id stands for (nil for ids the tokenizer does not know).
func (v *Vocab) Bytes(id int) []byte {
	if id < 0 || id >= v.size {
		return nil
	}
	return v.bytes[id]
}

// Ordinary reports whether id may appear inside a constrained output: it is
// not special and stands for at least one byte.
func (v *Vocab) Ordinary(id int) bool {
	return id >= 0 && id < v.size && !v.special[id] && len(v.bytes[id]) > 0
}
