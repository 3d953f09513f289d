package constrain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"chat/engine/constrain/regex"
	"chat/engine/constrain/testvocab"
	"chat/models"
)

// randomRegex writes a random pattern over characters that the real
// vocabularies hold in many forms: letters, digits, spaces, punctuation,
// multi-byte characters (so tokens holding part of one matter) and classes.
func randomRegex(rng *rand.Rand, depth int) string {
	atoms := []string{"a", "e", "th", " ", "\\.", ",", "[0-9]", "[a-z]", "[^a-z]", ".", "é", "日", "[à-ÿ]", "\\n", "[ \\t]", "\\{", "\"", "[^\"\\\\]", "[A-Z]"}
	if depth <= 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	switch rng.IntN(6) {
	case 0:
		return "(" + randomRegex(rng, depth-1) + "|" + randomRegex(rng, depth-1) + ")"
	case 1:
		ops := []string{"*", "+", "?", "{2}", "{1,3}", "{0,4}", "{2,}"}
		return "(" + randomRegex(rng, depth-1) + ")" + ops[rng.IntN(len(ops))]
	default:
		return randomRegex(rng, depth-1) + randomRegex(rng, depth-1)
	}
}

// For random regexes and every DFA state (all are reachable after
// minimisation), an id is in the mask iff it is ordinary and its bytes keep
// the DFA alive, or it is an end id and the state accepts: checked by brute
// force over every id of each real vocabulary.
func TestMaskBruteForce(t *testing.T) {
	for _, name := range testvocab.Names {
		t.Run(name, func(t *testing.T) {
			tok := testvocab.Load(t, name)
			v := NewVocab(tok, tok.Size())
			checkSpecials(t, tok, v)
			ends := []int{tok.EOT()}
			rng := rand.New(rand.NewPCG(uint64(len(name)), 99))
			regexes := 30
			switch {
			case tok.Size() > 100_000:
				regexes = 6
			case tok.Size() > 10_000:
				regexes = 12
			}
			fixed := []string{`[^"]*`, `.*`, `(\w+ )*\w+\.`, `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, `[日本語]+|\s`}
			for i := range regexes + len(fixed) {
				pat := randomRegex(rng, 4)
				if i < len(fixed) {
					pat = fixed[i]
				}
				d, err := regex.Compile(pat)
				if err != nil {
					continue // e.g. a pattern that matches nothing
				}
				m := New(d, v, "regex")
				m.Begin(ends)
				for s := range int32(d.States()) {
					mk, err := m.Mask(State(s), 0)
					if err != nil {
						t.Fatal(err)
					}
					n := 0
					for id := range v.Size() {
						want := v.Ordinary(id) && walk(d, s, v.Bytes(id)) >= 0 || id == tok.EOT() && d.Accepting(s)
						if mk.Allows(id) != want {
							t.Fatalf("%q state %d: id %d %q allowed=%v, want %v", pat, s, id, v.Bytes(id), mk.Allows(id), want)
						}
						if want {
							n++
						}
						if next, ok := m.Next(State(s), id); ok != want {
							t.Fatalf("%q state %d: Next(id %d) ok=%v, want %v", pat, s, id, ok, want)
						} else if ok && v.Ordinary(id) && int32(next) != walk(d, s, v.Bytes(id)) {
							t.Fatalf("%q state %d: Next(id %d) = %d", pat, s, id, next)
						}
					}
					if n != mk.Count || n == 0 {
						t.Fatalf("%q state %d: Count %d, %d ids allowed", pat, s, mk.Count, n)
					}
				}
			}
		})
	}
}

// walk is the DFA state after b from s, or Dead.
func walk(d *regex.DFA, s int32, b []byte) int32 {
	for _, c := range b {
		s = d.Next(s, c)
	}
	return s
}

// checkSpecials: the ids the tokenizer marks special, the end and BOS ids
// never enter the trie, and byte-fallback tokens do.
func checkSpecials(t *testing.T, tok models.Tokenizer, v *Vocab) {
	t.Helper()
	for _, id := range []int{tok.EOT(), tok.BOS()} {
		if id >= 0 && v.Ordinary(id) {
			t.Errorf("id %d (%q) is ordinary", id, v.Bytes(id))
		}
	}
	bytesSeen := map[byte]bool{}
	for id := range v.Size() {
		if b := v.Bytes(id); v.Ordinary(id) && len(b) == 1 {
			bytesSeen[b[0]] = true
		}
		if v.Ordinary(id) && strings.HasPrefix(string(v.Bytes(id)), "<|") && strings.HasSuffix(string(v.Bytes(id)), "|>") {
			t.Errorf("id %d %q looks like a special token but is ordinary", id, v.Bytes(id))
		}
	}
	if len(bytesSeen) < 256 && tok.Size() > 256 {
		t.Errorf("only %d of 256 bytes have an ordinary one-byte token", len(bytesSeen))
	}
}

// Near the end of the budget, an id is allowed iff it is allowed at all and
// leaves at most budget-2 bytes to complete (the end id: iff the state
// accepts); when no id can complete in time the plain mask stands.
func TestBudgetMasks(t *testing.T) {
	for _, name := range []string{"stories260K", "course"} {
		tok := testvocab.Load(t, name)
		v := NewVocab(tok, tok.Size())
		ends := []int{tok.EOT()}
		for _, pat := range []string{`[a-z]{1,8}@[a-z]{2,6}\.(com|org)`, `(a|b{20})c`, `"[^"]{0,40}"`} {
			d, err := regex.Compile(pat)
			if err != nil {
				t.Fatal(err)
			}
			m := New(d, v, "regex")
			m.Begin(ends)
			for s := range int32(d.States()) {
				plain, err := m.Mask(State(s), 0)
				if err != nil {
					t.Fatal(err)
				}
				for budget := 1; budget <= 24; budget++ {
					got, err := m.Mask(State(s), budget)
					if err != nil {
						t.Fatal(err)
					}
					want := make([]bool, v.Size())
					n := 0
					for id := range v.Size() {
						if !plain.Allows(id) {
							continue
						}
						if id == tok.EOT() {
							want[id] = true
						} else {
							want[id] = int(d.Distance(walk(d, s, v.Bytes(id)))) <= budget-2
						}
						if want[id] {
							n++
						}
					}
					for id := range v.Size() {
						w := want[id] || n == 0 && plain.Allows(id)
						if got.Allows(id) != w {
							t.Fatalf("%s %q state %d budget %d: id %d %q allowed=%v, want %v", name, pat, s, budget, id, v.Bytes(id), got.Allows(id), w)
						}
					}
				}
			}
		}
	}
}
