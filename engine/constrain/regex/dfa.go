package regex

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Dead is the transition to nowhere: the input can no longer match.
const Dead = -1

// MaxStates bounds the DFA (before minimisation) so that a pattern like
// (a|b)*a(a|b){12} fails with a message instead of taking the machine.
const MaxStates = 20_000

// DFA is a minimised deterministic automaton over bytes. Every state it has
// can still reach a match; a transition out of the language goes to Dead.
// State 0 is the start.
type DFA struct {
	classOf [256]uint8 // byte → equivalence class (bytes no transition tells apart)
	nclass  int
	trans   []int32 // state*nclass + class → next state or Dead
	accept  []bool
	dist    []int32 // fewest bytes from each state to a match
}

// determinize runs the subset construction over byte classes.
func determinize(n *nfa) (*DFA, error) {
	d := &DFA{}
	d.classes(n)
	reps := make([]byte, d.nclass) // one byte of each class
	for b := 255; b >= 0; b-- {
		reps[d.classOf[b]] = byte(b)
	}

	seen := make([]uint32, len(n.states)) // closure marks, by generation
	gen := uint32(0)
	var stack []int32
	closure := func(set []int32) []int32 {
		gen++
		out := set[:0:0]
		stack = append(stack[:0], set...)
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[s] == gen {
				continue
			}
			seen[s] = gen
			out = append(out, s)
			stack = append(stack, n.states[s].eps...)
		}
		slices.Sort(out)
		return out
	}
	key := func(set []int32) string {
		b := make([]byte, 4*len(set))
		for i, s := range set {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(s))
		}
		return string(b)
	}

	ids := map[string]int32{}
	var sets [][]int32
	intern := func(set []int32) (int32, error) {
		k := key(set)
		if id, ok := ids[k]; ok {
			return id, nil
		}
		if len(sets) >= MaxStates {
			return 0, fmt.Errorf("regex: pattern too complex: its automaton has over %d states", MaxStates)
		}
		id := int32(len(sets))
		ids[k] = id
		sets = append(sets, set)
		d.accept = append(d.accept, slices.Contains(set, n.match))
		d.trans = append(d.trans, make([]int32, d.nclass)...)
		return id, nil
	}
	if _, err := intern(closure([]int32{n.start})); err != nil {
		return nil, err
	}
	var next []int32
	for i := 0; i < len(sets); i++ {
		for c := 0; c < d.nclass; c++ {
			b := reps[c]
			next = next[:0]
			for _, s := range sets[i] {
				st := &n.states[s]
				if st.byteOK && st.lo <= b && b <= st.hi {
					next = append(next, st.out)
				}
			}
			t := int32(Dead)
			if len(next) > 0 {
				var err error
				if t, err = intern(closure(next)); err != nil {
					return nil, err
				}
			}
			d.trans[i*d.nclass+c] = t
		}
	}
	return d, nil
}

// classes splits the 256 bytes at every range boundary of the NFA.
func (d *DFA) classes(n *nfa) {
	var cut [257]bool
	for _, s := range n.states {
		if s.byteOK {
			cut[s.lo] = true
			cut[int(s.hi)+1] = true
		}
	}
	c := -1
	for b := 0; b < 256; b++ {
		if b == 0 || cut[b] {
			c++
		}
		d.classOf[b] = uint8(c)
	}
	d.nclass = c + 1
}

// maxRefineWork bounds the states minimize's rounds look at in all. A
// round looks at every live state, and a chain of n states takes n rounds:
// "(0123456789abcdefg){1000}", 25 bytes, took 55 s and 27 GB to merge
// nothing. Past it the live states are kept unmerged, which matches the
// same strings with more states. (The rounds share one map of signatures,
// cleared: a new one each round spent a third of that time growing.)
const maxRefineWork = 1 << 23

// minimize drops the states that cannot reach a match and merges the
// states no input tells apart (Moore's partition refinement). State 0 stays
// the start; it returns false when the start itself cannot match.
func (d *DFA) minimize() bool {
	n, k := len(d.accept), d.nclass
	// Live states: those that reach an accepting one (reverse search).
	rev := d.reverse()
	live := make([]bool, n)
	var stack []int32
	for s, a := range d.accept {
		if a {
			live[s] = true
			stack = append(stack, int32(s))
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range rev[s] {
			if !live[p] {
				live[p] = true
				stack = append(stack, p)
			}
		}
	}
	if !live[0] {
		return false
	}

	// Refine: a block is (accepting, the blocks of the successors).
	block := make([]int32, n)
	for s := range n {
		switch {
		case !live[s]:
			block[s] = Dead
		case d.accept[s]:
			block[s] = 1
		default:
			block[s] = 0
		}
	}
	nblocks, nlive := -1, 0
	for s := range n {
		if live[s] {
			nlive++
		}
	}
	sig := make([]byte, 4*(k+1))
	ids := map[string]int32{}
	for work := nlive; ; work += nlive {
		if work > maxRefineWork {
			// Every live state a block of its own: the same language,
			// unmerged.
			nblocks = 0
			for s := range n {
				if block[s] != Dead {
					block[s] = int32(nblocks)
					nblocks++
				}
			}
			break
		}
		clear(ids)
		next := make([]int32, n)
		for s := range n {
			if !live[s] {
				next[s] = Dead
				continue
			}
			binary.LittleEndian.PutUint32(sig, uint32(block[s]))
			for c := range k {
				t := d.trans[s*k+c]
				b := int32(Dead)
				if t >= 0 {
					b = block[t]
				}
				binary.LittleEndian.PutUint32(sig[4*(c+1):], uint32(b))
			}
			id, ok := ids[string(sig)]
			if !ok {
				id = int32(len(ids))
				ids[string(sig)] = id
			}
			next[s] = id
		}
		block = next
		if len(ids) == nblocks {
			break
		}
		nblocks = len(ids)
	}

	// Renumber the blocks in breadth-first order from the start.
	order := make([]int32, nblocks)
	for i := range order {
		order[i] = Dead
	}
	rep := make([]int32, 0, nblocks) // a state of each new state
	order[block[0]] = 0
	rep = append(rep, 0)
	for i := 0; i < len(rep); i++ {
		s := rep[i]
		for c := range k {
			if t := d.trans[int(s)*k+c]; t >= 0 && block[t] >= 0 && order[block[t]] == Dead {
				order[block[t]] = int32(len(rep))
				rep = append(rep, t)
			}
		}
	}
	trans := make([]int32, len(rep)*k)
	accept := make([]bool, len(rep))
	for i, s := range rep {
		accept[i] = d.accept[s]
		for c := range k {
			t := d.trans[int(s)*k+c]
			if t >= 0 && block[t] >= 0 {
				trans[i*k+c] = order[block[t]]
			} else {
				trans[i*k+c] = Dead
			}
		}
	}
	d.trans, d.accept = trans, accept
	d.distances()
	return true
}

// distances fills d.dist by a breadth-first search backwards from the
// accepting states.
func (d *DFA) distances() {
	n := len(d.accept)
	rev := d.reverse()
	d.dist = make([]int32, n)
	var queue []int32
	for s := range n {
		d.dist[s] = -1
		if d.accept[s] {
			d.dist[s] = 0
			queue = append(queue, int32(s))
		}
	}
	for i := 0; i < len(queue); i++ {
		s := queue[i]
		for _, p := range rev[s] {
			if d.dist[p] < 0 {
				d.dist[p] = d.dist[s] + 1
				queue = append(queue, p)
			}
		}
	}
}

// reverse lists, for each state, the states with a transition into it.
func (d *DFA) reverse() [][]int32 {
	n, k := len(d.accept), d.nclass
	rev := make([][]int32, n)
	for s := range n {
		for c := range k {
			if t := d.trans[s*k+c]; t >= 0 {
				rev[t] = append(rev[t], int32(s))
			}
		}
	}
	return rev
}
