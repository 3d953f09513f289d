package regex

import (
	"fmt"

	"chat/engine/constrain/utf8range"
)

// The NFA is Thompson's construction over bytes: a state either consumes
// one byte in [lo, hi] and moves to out, or moves without input to each of
// eps. Character classes become their UTF-8 byte sequences.

type nfaState struct {
	lo, hi byte
	byteOK bool // a byte transition (else epsilon)
	out    int32
	eps    []int32
}

type nfa struct {
	states []nfaState
	start  int32
	match  int32
}

// maxNFAStates bounds memory for patterns like (a{1000}){1000}.
const maxNFAStates = 200_000

var errTooBig = fmt.Errorf("regex: pattern too large: over %d automaton states (lower the repeat counts)", maxNFAStates)

func buildNFA(root *Node) (*nfa, error) {
	n := &nfa{}
	n.match = n.add(nfaState{})
	start, err := n.compile(root, n.match)
	if err != nil {
		return nil, err
	}
	n.start = start
	return n, nil
}

func (n *nfa) add(s nfaState) int32 {
	n.states = append(n.states, s)
	return int32(len(n.states) - 1)
}

func (n *nfa) split(to ...int32) int32 { return n.add(nfaState{eps: to}) }

// compile adds the states that match node and then continue at next, and
// returns the first of them.
func (n *nfa) compile(node *Node, next int32) (int32, error) {
	if len(n.states) > maxNFAStates {
		return 0, errTooBig
	}
	switch node.Op {
	case OpEmpty:
		return next, nil
	case OpClass:
		var starts []int32
		for _, seq := range utf8range.Sequences(node.Class) {
			s := next
			for i := len(seq) - 1; i >= 0; i-- {
				s = n.add(nfaState{lo: byte(seq[i].Lo), hi: byte(seq[i].Hi), byteOK: true, out: s})
			}
			starts = append(starts, s)
		}
		if len(starts) == 1 {
			return starts[0], nil
		}
		return n.split(starts...), nil
	case OpConcat:
		s := next
		for i := len(node.Subs) - 1; i >= 0; i-- {
			var err error
			if s, err = n.compile(node.Subs[i], s); err != nil {
				return 0, err
			}
		}
		return s, nil
	case OpAlt:
		starts := make([]int32, len(node.Subs))
		for i, sub := range node.Subs {
			var err error
			if starts[i], err = n.compile(sub, next); err != nil {
				return 0, err
			}
		}
		return n.split(starts...), nil
	case OpRepeat:
		sub := node.Subs[0]
		s := next
		if node.Max < 0 {
			// A loop: from l, either one more sub (back to l) or on.
			l := n.split()
			body, err := n.compile(sub, l)
			if err != nil {
				return 0, err
			}
			n.states[l].eps = []int32{body, next}
			s = l
		} else {
			// (sub(sub(...)?)?)? for the optional copies.
			for range node.Max - node.Min {
				body, err := n.compile(sub, s)
				if err != nil {
					return 0, err
				}
				s = n.split(body, next)
			}
		}
		for range node.Min {
			var err error
			if s, err = n.compile(sub, s); err != nil {
				return 0, err
			}
		}
		return s, nil
	}
	return 0, fmt.Errorf("regex: unknown node %d", node.Op)
}
