package constrain

// Automaton is a byte-level recogniser with integer states: the regex DFA
// (engine/constrain/regex) or the grammar machine (engine/constrain/gbnf),
// which builds its states lazily. The mask walk reads the transition table
// directly, so the per-byte cost is one lookup.
type Automaton interface {
	// Start is the state before any byte.
	Start() int32
	// Accepting reports whether the bytes so far are a complete output.
	Accepting(s int32) bool
	// Classes maps each byte to its equivalence class (bytes no transition
	// tells apart) and gives the number of classes.
	Classes() (*[256]uint8, int)
	// Table is the transition table: Table()[s*nclass+class] is the next
	// state, Dead, or Unknown for a transition not computed yet. The slice
	// may be replaced by Resolve; read it again after calling Resolve.
	Table() []int32
	// Resolve computes the transition from s on b (an Unknown entry),
	// records it in the table and returns it: a state, Dead, or Failed
	// (then Err says why).
	Resolve(s int32, b byte) int32
	// Err is the error behind a Failed transition, or nil.
	Err() error
	// Distance is the fewest bytes that take s to an accepting state (0
	// when s accepts); it lets a reply be completed within its budget.
	Distance(s int32) int32
}

// Transition values that are not states.
const (
	Dead    = -1 // the bytes can no longer lead to an accepted output
	Unknown = -2 // not computed yet: call Resolve
	Failed  = -3 // the automaton gave up (Err says why)
)

// Forgetter is implemented by automata whose lazily built states can be
// dropped to bound memory; every state id handed out before becomes invalid.
type Forgetter interface {
	Forget()
	// States is the number of states built so far.
	States() int
}
