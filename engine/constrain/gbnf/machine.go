package gbnf

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Machine recognises a Grammar one byte at a time: a pushdown automaton
// simulated over every parse at once, like llama.cpp's grammar sampler, but
// with its states interned so that it presents itself as a plain
// state → byte → state table (constrain.Automaton) built lazily.
//
// A parse stack is a chain of frames; a frame is the position of the next
// symbol to match in an alternative. Stacks are hash-consed (a node is
// (position, parent node), node 0 is the empty stack), so stacks share
// their tails and compare by id. A machine state is the sorted set of
// stacks whose top is a terminal, plus the empty stack when the input so
// far is complete. A reference in last position replaces its frame (a tail
// call), so repeats do not grow the stacks; real nesting (a JSON array in
// an object in an array...) does, without a depth limit.
//
// A Machine is not safe for concurrent use.
type Machine struct {
	g *Grammar

	nodes   []node
	nodeIDs map[uint64]int32

	states   [][]int32 // sorted node ids
	stateIDs map[string]int32
	accept   []bool
	trans    []int32 // state*nclass+class: next state, Dead, Unknown or Failed

	nodeDist  []int32 // per node: bytes to empty the stack, -1 not computed
	stateDist []int32 // per state: the fewest over its stacks

	mark  []uint32 // per node: the expansion that last added it
	gen   uint32
	out   []int32
	key   []byte
	err   error
	start int32
}

type node struct{ pos, parent int32 }

// Transition values, as constrain.Automaton defines them.
const (
	Dead    = -1
	Unknown = -2
	Failed  = -3
)

// MaxStacks bounds the parses one state may hold: a very ambiguous grammar
// fails with an error instead of slowing every token down.
const MaxStacks = 4096

// NewMachine starts a machine on g.
func NewMachine(g *Grammar) *Machine {
	m := &Machine{g: g}
	m.Forget()
	return m
}

// Forget drops every state built so far and starts again from the start
// state (bounding memory over many replies; old state ids become invalid).
func (m *Machine) Forget() {
	m.nodes = append(m.nodes[:0], node{-1, -1}) // node 0: the empty stack
	m.nodeDist = append(m.nodeDist[:0], 0)
	m.stateDist = m.stateDist[:0]
	m.nodeIDs = map[uint64]int32{}
	m.states, m.stateIDs, m.accept, m.trans = nil, map[string]int32{}, nil, nil
	m.mark = m.mark[:0]
	m.err = nil
	m.begin()
	for _, a := range m.g.rules[m.g.root].alts {
		m.expand(m.norm(a, 0))
	}
	m.start = m.intern()
}

// States is the number of states built so far.
func (m *Machine) States() int { return len(m.states) }

// Start is the state before any byte.
func (m *Machine) Start() int32 { return m.start }

// Accepting reports whether the bytes so far are a complete output.
func (m *Machine) Accepting(s int32) bool { return s >= 0 && int(s) < len(m.accept) && m.accept[s] }

// Classes returns the byte → class map and the number of classes.
func (m *Machine) Classes() (*[256]uint8, int) { return &m.g.classOf, m.g.nclass }

// Table is the transition table; entries not computed yet are Unknown.
func (m *Machine) Table() []int32 { return m.trans }

// Err is the reason for a Failed transition.
func (m *Machine) Err() error { return m.err }

// Next is the state after b (Resolve when not computed yet).
func (m *Machine) Next(s int32, b byte) int32 {
	if s < 0 {
		return s
	}
	if t := m.trans[int(s)*m.g.nclass+int(m.g.classOf[b])]; t != Unknown {
		return t
	}
	return m.Resolve(s, b)
}

// Match reports whether all of b is a complete output of the grammar.
func (m *Machine) Match(b []byte) bool {
	s := m.Start()
	for _, c := range b {
		if s = m.Next(s, c); s < 0 {
			return false
		}
	}
	return m.Accepting(s)
}

// Resolve computes the transition from s on b and records it.
func (m *Machine) Resolve(s int32, b byte) int32 {
	c := int(m.g.classOf[b])
	nc := m.g.nclass
	if t := m.trans[int(s)*nc+c]; t != Unknown {
		return t
	}
	m.begin()
	for _, n := range m.states[s] {
		if n == 0 {
			continue // a complete parse takes no more bytes
		}
		nd := m.nodes[n]
		if m.g.has[int(m.g.syms[nd.pos].arg)*nc+c] {
			m.expand(m.norm(nd.pos+1, nd.parent))
		}
	}
	t := int32(Dead)
	switch {
	case len(m.out) > MaxStacks:
		t = Failed
		m.err = fmt.Errorf("gbnf: the grammar is too ambiguous: over %d parses at once (after a %q byte)", MaxStacks, b)
	case len(m.out) > 0:
		t = m.intern()
	}
	m.trans[int(s)*nc+c] = t
	return t
}

// begin starts collecting a new set of stacks in m.out.
func (m *Machine) begin() {
	m.gen++
	m.out = m.out[:0]
}

// norm is the node for "next symbol at pos, then parent": when pos is the
// end of its alternative the frame is finished, and the node is parent.
func (m *Machine) norm(pos, parent int32) int32 {
	if m.g.syms[pos].kind == symEnd {
		return parent
	}
	k := uint64(uint32(pos))<<32 | uint64(uint32(parent))
	if id, ok := m.nodeIDs[k]; ok {
		return id
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, node{pos, parent})
	m.nodeDist = append(m.nodeDist, min(m.g.rest[pos]+m.nodeDist[parent], maxDist))
	m.nodeIDs[k] = id
	return id
}

// Distance is the fewest bytes that complete the output from state s (0
// when s accepts).
func (m *Machine) Distance(s int32) int32 { return m.stateDist[s] }

// expand adds to m.out the stacks n leads to whose top is a terminal (or
// the empty stack): a reference on top is replaced by each alternative of
// its rule, with the rest of the frame as the new frame's parent.
func (m *Machine) expand(n int32) {
	for len(m.mark) < len(m.nodes) {
		m.mark = append(m.mark, 0)
	}
	if m.mark[n] == m.gen {
		return
	}
	m.mark[n] = m.gen
	if n == 0 {
		m.out = append(m.out, 0)
		return
	}
	nd := m.nodes[n]
	s := m.g.syms[nd.pos]
	if s.kind == symTerm {
		m.out = append(m.out, n)
		return
	}
	if len(m.out) > MaxStacks {
		return
	}
	cont := m.norm(nd.pos+1, nd.parent)
	for _, a := range m.g.rules[s.arg].alts {
		m.expand(m.norm(a, cont))
	}
}

// intern returns the state id of the set in m.out, adding it if new.
func (m *Machine) intern() int32 {
	slices.Sort(m.out)
	m.key = m.key[:0]
	for _, n := range m.out {
		m.key = binary.LittleEndian.AppendUint32(m.key, uint32(n))
	}
	if id, ok := m.stateIDs[string(m.key)]; ok {
		return id
	}
	id := int32(len(m.states))
	m.stateIDs[string(m.key)] = id
	m.states = append(m.states, slices.Clone(m.out))
	m.accept = append(m.accept, len(m.out) > 0 && m.out[0] == 0)
	d := int32(maxDist)
	for _, n := range m.out {
		d = min(d, m.nodeDist[n])
	}
	m.stateDist = append(m.stateDist, d)
	for range m.g.nclass {
		m.trans = append(m.trans, Unknown)
	}
	return id
}
