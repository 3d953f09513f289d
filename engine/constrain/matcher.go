package constrain

import (
	"errors"
	"slices"
)

// Matcher runs an Automaton over a Vocab: it is the Constraint the engine
// holds. The mask of a state is computed once, by one walk of the trie, and
// cached by state; an accepting state's mask also holds the end ids.
//
// It is not safe for concurrent use (the engine goroutine owns it during a
// reply).
type Matcher struct {
	a    Automaton
	v    *Vocab
	desc string

	ends   []int
	masks  []*entry // by state; nil: not computed yet
	tails  map[[2]int32]*Mask
	cached int64   // bytes held by masks and tails
	stack  []int32 // the walk's state per trie depth
	// classes of the trie's bytes under a, computed once
	nodeClass []uint8
}

// Mask is the set of ids allowed in one state.
type Mask struct {
	Bits  []uint64 // bit id%64 of word id/64 set: id allowed. Shared: do not modify.
	Count int      // ids allowed
}

// entry is a state's cached mask and the farthest its ids lead: the most
// bytes any allowed id leaves to complete the output.
type entry struct {
	mask Mask
	far  int32
}

// Allows reports whether id is in the mask.
func (m Mask) Allows(id int) bool {
	return id >= 0 && id/64 < len(m.Bits) && m.Bits[id/64]>>(id%64)&1 != 0
}

// maxCacheBytes bounds the cached masks (and the lazily built automaton
// states): above it, both are dropped when the next reply begins.
const maxCacheBytes = 256 << 20

// maxAutomatonStates bounds a lazily built automaton the same way.
const maxAutomatonStates = 500_000

// New binds an automaton to a vocabulary. desc names the constraint for
// the panel ("json", "regex [a-z]+", ...).
func New(a Automaton, v *Vocab, desc string) *Matcher {
	m := &Matcher{a: a, v: v, desc: desc, stack: make([]int32, v.maxDepth+1)}
	classOf, _ := a.Classes()
	m.nodeClass = make([]uint8, len(v.nodes))
	for i, n := range v.nodes {
		m.nodeClass[i] = classOf[n.b]
	}
	return m
}

// CacheBytes is the memory the cached masks hold (a server bounds what
// idle matchers keep by it).
func (m *Matcher) CacheBytes() int64 { return m.cached }

// String is the description given to New.
func (m *Matcher) String() string { return m.desc }

// Begin starts a reply and returns the start state. ends are the ids that
// end the reply (the engine's stop ids); they are allowed exactly in the
// accepting states, and forced where nothing else can follow.
func (m *Matcher) Begin(ends []int) State {
	var valid []int
	for _, id := range ends {
		if id >= 0 && id < m.v.size && !slices.Contains(valid, id) {
			valid = append(valid, id)
		}
	}
	slices.Sort(valid)
	f, lazy := m.a.(Forgetter)
	if !slices.Equal(valid, m.ends) || m.cached > maxCacheBytes || lazy && f.States() > maxAutomatonStates {
		m.ends = valid
		m.masks, m.tails, m.cached = nil, nil, 0
		if lazy && f.States() > maxAutomatonStates {
			f.Forget()
		}
	}
	return State(m.a.Start())
}

// Mask is the set of ids allowed in state s when budget more ids may be
// taken, this one included (budget <= 0: no limit). Where the budget could
// end the reply before the output is complete, only the ids that leave
// few enough bytes to finish in the ids left are allowed (every byte is
// assumed spellable by one id, plus one for the end id); if none can, the
// plain mask is returned and the reply will be cut short. Otherwise, and
// always far from the budget, it is the plain mask: ids whose bytes keep
// the automaton alive, cached per state.
func (m *Matcher) Mask(s State, budget int) (Mask, error) {
	if s < 0 {
		return Mask{}, errors.New("constrain: no state (the output already left the constraint)")
	}
	e, err := m.entry(s)
	if err != nil {
		return Mask{}, err
	}
	if budget <= 0 || int(e.far) <= budget-2 {
		return e.mask, nil
	}
	key := [2]int32{int32(s), int32(budget)}
	if mk, ok := m.tails[key]; ok {
		return *mk, nil
	}
	mk := &Mask{Bits: make([]uint64, m.v.Words())}
	if _, err := m.walk(int32(s), mk, int32(budget-2)); err != nil {
		return Mask{}, err
	}
	m.setEnds(int32(s), mk)
	if mk.Count == 0 {
		mk = &e.mask
	}
	if m.tails == nil {
		m.tails = map[[2]int32]*Mask{}
	}
	m.tails[key] = mk
	m.cached += int64(8 * len(mk.Bits))
	return *mk, nil
}

// entry is the cached plain mask of s, computed on first use.
func (m *Matcher) entry(s State) (*entry, error) {
	if int(s) < len(m.masks) && m.masks[s] != nil {
		return m.masks[s], nil
	}
	e := &entry{mask: Mask{Bits: make([]uint64, m.v.Words())}}
	far, err := m.walk(int32(s), &e.mask, -1)
	if err != nil {
		return nil, err
	}
	e.far = far
	m.setEnds(int32(s), &e.mask)
	if int(s) >= len(m.masks) {
		m.masks = append(m.masks, make([]*entry, int(s)+1-len(m.masks))...)
	}
	m.masks[s] = e
	m.cached += int64(8 * len(e.mask.Bits))
	return e, nil
}

// setEnds sets the end ids in mk exactly when s accepts: an end id ends the
// reply, so it is allowed where the output is complete, even when its
// bytes are ordinary text.
func (m *Matcher) setEnds(s int32, mk *Mask) {
	accept := m.a.Accepting(s)
	for _, id := range m.ends {
		was := mk.Bits[id/64]>>(id%64)&1 != 0
		switch {
		case accept && !was:
			mk.Bits[id/64] |= 1 << (id % 64)
			mk.Count++
		case !accept && was:
			mk.Bits[id/64] &^= 1 << (id % 64)
			mk.Count--
		}
	}
}

// walk sets the bits of every ordinary id whose bytes keep the automaton
// alive from s (and, when limit >= 0, leave at most limit bytes to
// complete the output): one depth-first pass over the trie, skipping a
// subtree as soon as its prefix is dead. It returns the most bytes any
// allowed id leaves to complete.
func (m *Matcher) walk(s int32, mk *Mask, limit int32) (far int32, err error) {
	_, nc := m.a.Classes()
	table := m.a.Table()
	nodes, classes, toks, st := m.v.nodes, m.nodeClass, m.v.toks, m.stack
	st[0] = s
	count := 0
	for i := 0; i < len(nodes); {
		n := &nodes[i]
		cur := st[n.depth-1]
		next := table[int(cur)*nc+int(classes[i])]
		if next == Unknown {
			next = m.a.Resolve(cur, n.b)
			table = m.a.Table()
		}
		if next < 0 {
			if next == Failed {
				return 0, m.failed()
			}
			i = int(n.end)
			continue
		}
		st[n.depth] = next
		if n.ntok > 0 {
			if d := m.a.Distance(next); limit < 0 || d <= limit {
				far = max(far, d)
				for _, id := range toks[n.tok : n.tok+n.ntok] {
					mk.Bits[id/64] |= 1 << (id % 64)
				}
				count += int(n.ntok)
			}
		}
		i++
	}
	mk.Count = count
	return far, nil
}

func (m *Matcher) failed() error {
	if err := m.a.Err(); err != nil {
		return err
	}
	return errors.New("constrain: the automaton failed")
}

// Next is the state after id, and whether id is allowed in s. An end id is
// allowed (and leaves the state as it is) exactly when s accepts.
func (m *Matcher) Next(s State, id int) (State, bool) {
	if s < 0 || id < 0 || id >= m.v.size {
		return s, false
	}
	if slices.Contains(m.ends, id) {
		return s, m.a.Accepting(int32(s))
	}
	if !m.v.Ordinary(id) {
		return s, false
	}
	cur := int32(s)
	classOf, nc := m.a.Classes()
	for _, b := range m.v.bytes[id] {
		next := m.a.Table()[int(cur)*nc+int(classOf[b])]
		if next == Unknown {
			next = m.a.Resolve(cur, b)
		}
		if next < 0 {
			return s, false
		}
		cur = next
	}
	return State(cur), true
}

// Accepting reports whether the output so far is complete.
func (m *Matcher) Accepting(s State) bool { return s >= 0 && m.a.Accepting(int32(s)) }
