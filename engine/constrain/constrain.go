// Package constrain limits generation to outputs a regex, a JSON Schema or
// a GBNF grammar accepts, by masking the tokens that cannot continue one.
//
// A constraint is compiled to a byte-level Automaton (automaton.go):
//
//   - a regex (engine/constrain/regex) to a minimised DFA over UTF-8 bytes;
//   - a GBNF grammar (engine/constrain/gbnf), llama.cpp's format, to a
//     pushdown machine over bytes whose states (sets of parse stacks) are
//     built lazily and interned, so it too is a state → byte → state table
//     once warm; nesting is unbounded (no depth limit);
//   - JSON (--format json) and JSON Schema (engine/constrain/jsonschema) to a
//     GBNF grammar, as llama.cpp's json-schema-to-grammar does, so there is
//     one recogniser for both.
//
// The mask of a state (matcher.go) is the set of ids whose bytes keep the
// automaton alive: one depth-first walk of a byte trie of the vocabulary
// (vocab.go), cached per state. Special tokens are never allowed except the
// end ids, which are allowed exactly in accepting states; where an
// accepting state has no other continuation the end is forced. Near the
// end of a reply's token budget, only the ids that can still lead to a
// complete output within it are allowed, so that a reply is cut short only
// when no completion fits at all; this changes the distribution of those
// last tokens only.
//
// The bytes a constraint sees are models.Tokenizer.TokenBytes, which is what
// the engine prints (SentencePiece's ▁ is a space, <0xNN> its byte; the
// engine does not strip the first piece's leading space), so the reply text
// is exactly what the constraint accepted. A vocabulary must be able to
// spell every byte the constraint needs (all of ours can: byte tokens or
// byte fallback); otherwise a state can be alive with no token to continue,
// and the engine stops the reply with an error.
package constrain

// State is a position of a constraint: the bytes generated so far. States
// of one Constraint are only meaningful for it, and only within one reply.
type State int32

// Constraint is what the engine needs: a start state per reply, the mask of
// a state, the state after an id. *Matcher implements it.
type Constraint interface {
	// Begin starts a reply; ends are the ids that end it.
	Begin(ends []int) State
	// Mask is the set of ids allowed in s when budget more ids may be taken
	// (this one and the end id included; <= 0: no limit).
	Mask(s State, budget int) (Mask, error)
	// Next is the state after id, and whether id was allowed in s.
	Next(s State, id int) (State, bool)
	// Accepting reports whether the output so far is complete.
	Accepting(s State) bool
	// String names the constraint for the panel.
	String() string
}
