package gbnf

import (
	"fmt"
	"strings"

	"chat/engine/constrain/utf8range"
	"chat/models/quote"
)

// The lowered grammar: every rule is a list of alternatives, each a run of
// symbols in syms ended by symEnd. A symbol matches one byte of a byte set
// or a whole rule. Character classes become their UTF-8 byte sequences;
// groups and repeats become generated rules, as llama.cpp rewrites them:
//
//	X*      → S ::= X S |
//	X{m,n}  → X…X (m times) S(n-m),  S(k) ::= X S(k-1) |,  S(1) ::= X |
//
// The recursive reference is always the last symbol, so the machine
// treats it as a tail call and a long repeat does not grow the stack.

type symKind uint8

const (
	symEnd  symKind = iota // end of an alternative
	symTerm                // one byte of sets[arg]
	symRef                 // rule arg
)

type sym struct {
	kind symKind
	arg  int32
}

type rule struct {
	name string
	// made: for a rule the lowering made, what it was made for ("repeat",
	// "group", "class") in the user's rule base; "" for the user's rules.
	made, base string
	alts       []int32 // start index in syms of each alternative
	pos        int     // source offset (of the definition, or of the item it was made for)
	def        bool    // defined (not only referenced)
	src        int     // first place it was referenced, for "undefined rule" errors
}

// Grammar is a compiled grammar: immutable, shared by every Machine built
// from it.
type Grammar struct {
	syms  []sym
	rules []rule
	sets  [][4]uint64 // byte sets of the terminals
	root  int32

	classOf [256]uint8
	nclass  int
	has     []bool // sets × classes: has[set*nclass+class]

	// rest[p] is the fewest bytes that finish the alternative from symbol
	// p on (the machine's distance to a complete output).
	rest []int32
}

// maxSyms bounds a grammar after its repeats are expanded.
const maxSyms = 1 << 21

// Compile parses src (GBNF) and lowers it. Errors name the line and column.
func Compile(src string) (*Grammar, error) {
	defs, err := parse(src)
	if err != nil {
		return nil, err
	}
	l := &lowerer{src: src, g: &Grammar{}, ids: map[string]int32{}, setIDs: map[[4]uint64]int32{}, classRules: map[string]int32{}}
	for _, d := range defs {
		id := l.ruleID(d.name, d.pos)
		if r := &l.g.rules[id]; r.def {
			return nil, errAt(src, d.pos, "rule %s is defined twice (first at %s)", quote.Quote(d.name), errAt(src, r.pos, "").pos())
		}
		l.g.rules[id].def, l.g.rules[id].pos = true, d.pos
	}
	for _, d := range defs {
		id := l.ids[d.name]
		if err := l.define(id, d.name, d.alts); err != nil {
			return nil, err
		}
	}
	g := l.g
	for _, r := range g.rules {
		if !r.def {
			return nil, errAt(src, r.src, "rule %s is used but never defined", quote.Quote(r.name))
		}
	}
	root, ok := l.ids["root"]
	if !ok {
		return nil, &Error{1, 1, "expected a rule named root (the whole output must match it)"}
	}
	g.root = root
	short := g.shortest()
	if err := g.checkLeftRecursion(src, short); err != nil {
		return nil, err
	}
	if err := g.checkProductive(src); err != nil {
		return nil, err
	}
	g.classes()
	return g, nil
}

type lowerer struct {
	src        string
	g          *Grammar
	ids        map[string]int32
	setIDs     map[[4]uint64]int32
	classRules map[string]int32
}

func (l *lowerer) ruleID(name string, pos int) int32 {
	if id, ok := l.ids[name]; ok {
		return id
	}
	id := int32(len(l.g.rules))
	l.ids[name] = id
	l.g.rules = append(l.g.rules, rule{name: name, pos: pos, src: pos})
	return id
}

// newRule adds a generated rule named after the rule it was made for, and
// what in it (made: repeat, group or class).
func (l *lowerer) newRule(base, made string, pos int) int32 {
	id := int32(len(l.g.rules))
	l.g.rules = append(l.g.rules, rule{name: fmt.Sprintf("%s-%d", base, id), made: made, base: base, pos: pos, def: true})
	return id
}

// shown is how an error names rule r: the user's name, and for a rule the
// lowering made (root-2), the user's rule and where in it the item is
// ("root's repeat at line 1, col 10"): the generated names are nowhere in
// the grammar.
func (g *Grammar) shown(src string, r int32) string {
	ru := g.rules[r]
	if ru.made == "" {
		return quote.Quote(ru.name)
	}
	return fmt.Sprintf("%s's %s at %s", quote.Quote(ru.base), ru.made, errAt(src, ru.pos, "").pos())
}

// define lowers the alternatives of rule id.
func (l *lowerer) define(id int32, base string, alts [][]item) error {
	var lowered [][]sym
	for _, seq := range alts {
		var out []sym
		for _, it := range seq {
			s, err := l.item(base, it)
			if err != nil {
				return err
			}
			out = append(out, s...)
		}
		lowered = append(lowered, out)
	}
	return l.setAlts(id, lowered)
}

func (l *lowerer) setAlts(id int32, alts [][]sym) error {
	starts := make([]int32, len(alts))
	for i, a := range alts {
		starts[i] = int32(len(l.g.syms))
		l.g.syms = append(l.g.syms, a...)
		l.g.syms = append(l.g.syms, sym{kind: symEnd})
	}
	if len(l.g.syms) > maxSyms {
		return &Error{1, 1, fmt.Sprintf("grammar too large: over %d symbols once its repeats are expanded (lower the {m,n} counts)", maxSyms)}
	}
	l.g.rules[id].alts = starts
	return nil
}

func (l *lowerer) set(s [4]uint64) sym {
	id, ok := l.setIDs[s]
	if !ok {
		id = int32(len(l.g.sets))
		l.setIDs[s] = id
		l.g.sets = append(l.g.sets, s)
	}
	return sym{kind: symTerm, arg: id}
}

func byteSet(lo, hi rune) [4]uint64 {
	var s [4]uint64
	for b := lo; b <= hi; b++ {
		s[b/64] |= 1 << (b % 64)
	}
	return s
}

// item lowers one item, repeat included, to symbols.
func (l *lowerer) item(base string, it item) ([]sym, error) {
	one, err := l.once(base, it)
	if err != nil {
		return nil, err
	}
	if it.min == 1 && it.max == 1 || len(one) == 0 { // ""* is still ""
		return one, nil
	}
	if len(one) > 1 {
		r := l.newRule(base, "repeat", it.pos)
		if err := l.setAlts(r, [][]sym{one}); err != nil {
			return nil, err
		}
		one = []sym{{kind: symRef, arg: r}}
	}
	x := one[0]
	var out []sym
	for range it.min {
		out = append(out, x)
	}
	if len(out) > maxSyms {
		return nil, errAt(l.src, it.pos, "repeat too large")
	}
	switch {
	case it.max < 0:
		s := l.newRule(base, "repeat", it.pos)
		if err := l.setAlts(s, [][]sym{{x, {kind: symRef, arg: s}}, {}}); err != nil {
			return nil, err
		}
		out = append(out, sym{kind: symRef, arg: s})
	case it.max > it.min:
		prev := int32(-1)
		for k := 1; k <= it.max-it.min; k++ {
			s := l.newRule(base, "repeat", it.pos)
			alt := []sym{x}
			if prev >= 0 {
				alt = append(alt, sym{kind: symRef, arg: prev})
			}
			if err := l.setAlts(s, [][]sym{alt, {}}); err != nil {
				return nil, err
			}
			prev = s
		}
		out = append(out, sym{kind: symRef, arg: prev})
	}
	return out, nil
}

// once lowers an item without its repeat.
func (l *lowerer) once(base string, it item) ([]sym, error) {
	switch it.kind {
	case itemLiteral:
		out := make([]sym, len(it.lit))
		for i, b := range it.lit {
			out[i] = l.set(byteSet(rune(b), rune(b)))
		}
		return out, nil
	case itemRef:
		id := l.ruleID(it.name, it.pos)
		return []sym{{kind: symRef, arg: id}}, nil
	case itemGroup:
		if len(it.group) == 1 {
			var out []sym
			for _, sub := range it.group[0] {
				s, err := l.item(base, sub)
				if err != nil {
					return nil, err
				}
				out = append(out, s...)
			}
			return out, nil
		}
		r := l.newRule(base, "group", it.pos)
		if err := l.define(r, base, it.group); err != nil {
			return nil, err
		}
		return []sym{{kind: symRef, arg: r}}, nil
	}
	return l.class(base, it)
}

// class lowers a character class: one byte set when every character is one
// byte, else a rule with one alternative per UTF-8 byte-sequence pattern
// (shared by every use of the same class).
func (l *lowerer) class(base string, it item) ([]sym, error) {
	seqs := utf8range.Sequences(it.class)
	var single [4]uint64
	var multi [][]sym
	for _, s := range seqs {
		if len(s) == 1 {
			b := byteSet(s[0].Lo, s[0].Hi)
			for i := range single {
				single[i] |= b[i]
			}
			continue
		}
		var alt []sym
		for _, r := range s {
			alt = append(alt, l.set(byteSet(r.Lo, r.Hi)))
		}
		multi = append(multi, alt)
	}
	if multi == nil {
		return []sym{l.set(single)}, nil
	}
	key := fmt.Sprint(it.class)
	if r, ok := l.classRules[key]; ok {
		return []sym{{kind: symRef, arg: r}}, nil
	}
	if single != ([4]uint64{}) {
		multi = append([][]sym{{l.set(single)}}, multi...)
	}
	r := l.newRule(base, "class", it.pos)
	if err := l.setAlts(r, multi); err != nil {
		return nil, err
	}
	l.classRules[key] = r
	return []sym{{kind: symRef, arg: r}}, nil
}

// checkLeftRecursion refuses a rule that can reach itself without consuming
// a byte: the machine would expand it forever (llama.cpp refuses these too).
// short is each rule's shortest expansion (0: the rule can be empty).
func (g *Grammar) checkLeftRecursion(src string, short []int32) error {
	n := len(g.rules)
	// Edges A → B where B can start A.
	edges := make([][]int32, n)
	for i, r := range g.rules {
		for _, a := range r.alts {
			for p := a; g.syms[p].kind != symEnd; p++ {
				s := g.syms[p]
				if s.kind == symTerm {
					break
				}
				edges[i] = append(edges[i], s.arg)
				if short[s.arg] != 0 {
					break
				}
			}
		}
	}
	color := make([]uint8, n) // 0 new, 1 on the path, 2 done
	var path []int32
	var visit func(int32) []int32
	visit = func(v int32) []int32 {
		color[v] = 1
		path = append(path, v)
		for _, w := range edges[v] {
			if color[w] == 1 {
				for i, p := range path {
					if p == w {
						return append(append([]int32(nil), path[i:]...), w)
					}
				}
			}
			if color[w] == 0 {
				if c := visit(w); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		color[v] = 2
		return nil
	}
	for i := range n {
		if color[i] != 0 {
			continue
		}
		if cycle := visit(int32(i)); cycle != nil {
			names := make([]string, len(cycle))
			for j, c := range cycle {
				names[j] = g.shown(src, c)
			}
			return errAt(src, g.rules[cycle[0]].pos, "left recursion: %s can start with itself without consuming a character (a repeat of something that can be empty, or a rule that begins with itself)", strings.Join(names, " → "))
		}
	}
	return nil
}

// checkProductive refuses a rule reachable from root that can never
// finish (every alternative needs the rule itself again): a parse could
// enter it and stay alive forever without ever being complete.
func (g *Grammar) checkProductive(src string) error {
	prod := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for i, r := range g.rules {
			if prod[i] {
				continue
			}
			for _, a := range r.alts {
				ok := true
				for p := a; g.syms[p].kind != symEnd; p++ {
					if s := g.syms[p]; s.kind == symRef && !prod[s.arg] {
						ok = false
						break
					}
				}
				if ok {
					prod[i], changed = true, true
					break
				}
			}
		}
	}
	seen := make([]bool, len(g.rules))
	stack := []int32{g.root}
	seen[g.root] = true
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !prod[r] {
			return errAt(src, g.rules[r].pos, "rule %s can never finish: each of its alternatives needs it (or another such rule) again", g.shown(src, r))
		}
		for _, a := range g.rules[r].alts {
			for p := a; g.syms[p].kind != symEnd; p++ {
				if s := g.syms[p]; s.kind == symRef && !seen[s.arg] {
					seen[s.arg] = true
					stack = append(stack, s.arg)
				}
			}
		}
	}
	return nil
}

// classes splits the bytes into classes no terminal tells apart.
func (g *Grammar) classes() {
	ids := map[string]uint8{}
	words := (len(g.sets) + 63) / 64
	sig := make([]uint64, words)
	key := make([]byte, 8*words)
	for b := range 256 {
		clear(sig)
		for i, s := range g.sets {
			if s[b/64]>>(b%64)&1 != 0 {
				sig[i/64] |= 1 << (i % 64)
			}
		}
		for i, w := range sig {
			for j := range 8 {
				key[8*i+j] = byte(w >> (8 * j))
			}
		}
		c, ok := ids[string(key)]
		if !ok {
			c = uint8(len(ids))
			ids[string(key)] = c
		}
		g.classOf[b] = c
	}
	g.nclass = len(ids)
	g.has = make([]bool, len(g.sets)*g.nclass)
	for i, s := range g.sets {
		for b := range 256 {
			if s[b/64]>>(b%64)&1 != 0 {
				g.has[i*g.nclass+int(g.classOf[b])] = true
			}
		}
	}
}

// maxDist caps distances so that sums cannot overflow.
const maxDist = 1 << 28

// shortest computes the shortest expansion of every rule (a fixpoint over
// the alternatives), returns it and sets g.rest from it.
func (g *Grammar) shortest() []int32 {
	short := make([]int32, len(g.rules))
	for i := range short {
		short[i] = maxDist
	}
	altLen := func(a int32) int32 {
		n := int32(0)
		for p := a; g.syms[p].kind != symEnd; p++ {
			if s := g.syms[p]; s.kind == symTerm {
				n++
			} else {
				n += short[s.arg]
			}
			n = min(n, maxDist)
		}
		return n
	}
	for changed := true; changed; {
		changed = false
		for i, r := range g.rules {
			for _, a := range r.alts {
				if l := altLen(a); l < short[i] {
					short[i], changed = l, true
				}
			}
		}
	}
	g.rest = make([]int32, len(g.syms))
	for p := len(g.syms) - 1; p >= 0; p-- {
		switch s := g.syms[p]; s.kind {
		case symTerm:
			g.rest[p] = min(g.rest[p+1]+1, maxDist)
		case symRef:
			g.rest[p] = min(g.rest[p+1]+short[s.arg], maxDist)
		}
	}
	return short
}
