// Package regex compiles a regular expression into a minimised
// deterministic automaton over UTF-8 bytes, for constrained decoding: the
// whole output must match (as if the pattern were written ^(...)$).
//
// The pipeline is parse (parse.go) → Thompson NFA over bytes (nfa.go) →
// subset construction over byte equivalence classes → removal of the states
// that cannot reach a match → Moore minimisation (dfa.go).
//
// The subset, a part of Go's RE2 syntax:
//
//	literals        any UTF-8 character other than . [ ] ( ) { } * + ? | \ ^ $
//	escapes         \. \* \\ \/ (any ASCII punctuation), \n \t \r \f \v \0,
//	                \xHH, \uHHHH, \x{H...}, \u{H...}
//	class escapes   \d [0-9], \w [0-9A-Za-z_], \s [\t\n\f\r ], \D \W \S
//	classes         [abc] [a-z] [^a-z] [\d_-]; a ']' first in the class is literal
//	.               any character except \n
//	groups          (x) and (?:x), both non-capturing here
//	alternation     x|y
//	repeats         x? x* x+ x{m} x{m,} x{m,n} (m, n ≤ 1000), lazy forms
//	                x*? etc. accepted (they match the same strings)
//	anchors         ^ at the very start and $ at the very end (no-ops: the
//	                whole output matches anyway)
//
// Not supported, with an error naming the position: backreferences, word
// boundaries, lookaround, flags such as (?i), POSIX classes, ^ or $
// elsewhere. Classes are sets of code points (negated classes exclude the
// surrogates, which have no UTF-8 form), so the automaton accepts only
// valid UTF-8.
package regex

// Compile parses pattern and builds its minimised DFA.
func Compile(pattern string) (*DFA, error) {
	syn, err := Parse(pattern)
	if err != nil {
		return nil, err
	}
	n, err := buildNFA(syn.Root)
	if err != nil {
		return nil, err
	}
	d, err := determinize(n)
	if err != nil {
		return nil, err
	}
	if !d.minimize() {
		return nil, &Error{0, "the pattern matches nothing"}
	}
	return d, nil
}

// Start is the initial state (always 0).
func (d *DFA) Start() int32 { return 0 }

// Accepting reports whether the input so far is a full match.
func (d *DFA) Accepting(s int32) bool { return s >= 0 && int(s) < len(d.accept) && d.accept[s] }

// Classes returns the byte → class map and the number of classes.
func (d *DFA) Classes() (*[256]uint8, int) { return &d.classOf, d.nclass }

// Table is the transition table: Table()[s*nclass+class] is the next
// state or Dead. It is complete (never Unknown) and must not be modified.
func (d *DFA) Table() []int32 { return d.trans }

// Resolve is the transition on byte b (the table is complete, so this is a
// lookup; it exists for the automata that build their table lazily).
func (d *DFA) Resolve(s int32, b byte) int32 { return d.Next(s, b) }

// Next is the state after byte b, or Dead.
func (d *DFA) Next(s int32, b byte) int32 {
	if s < 0 {
		return Dead
	}
	return d.trans[int(s)*d.nclass+int(d.classOf[b])]
}

// Distance is the fewest bytes that take s to a match (0 when s accepts).
func (d *DFA) Distance(s int32) int32 { return d.dist[s] }

// Match reports whether the whole of b matches.
func (d *DFA) Match(b []byte) bool {
	s := d.Start()
	for _, c := range b {
		if s = d.Next(s, c); s < 0 {
			return false
		}
	}
	return d.Accepting(s)
}

// States is the number of states.
func (d *DFA) States() int { return len(d.accept) }

// Err is always nil: a DFA never fails.
func (d *DFA) Err() error { return nil }
