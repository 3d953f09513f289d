package session

import (
	"fmt"
	"strings"
	"time"
)

// Role of a message in the conversation.
type Role string

const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one turn of the conversation as the user sees it.
type Message struct {
	Role    Role
	Content string
	Time    time.Time // when it was sent or finished; zero for the system prompt
	// Dropped marks a turn the model no longer sees: it does not fit the
	// context any more (it stays on screen).
	Dropped bool
	// Tokens are the message as tokens (views.go), kept for a reply made
	// while the token view was on and for the user message that asked for
	// it (its turn of the prompt); nil otherwise. They are not saved.
	Tokens []Token
}

// Stats describe the reply being generated (or the last one).
type Stats struct {
	PromptTokens int           // tokens in the prompt of this reply
	ReusedTokens int           // prompt tokens whose KV came from the cache
	GenTokens    int           // tokens generated so far
	PrefillTokS  float64       // prompt tokens per second of prefill; 0 when too few were prefilled to say
	DecodeTokS   float64       // generated tokens per second of decode
	DecodeBound  time.Duration // the roofline bound of a decode step on this machine (bound.go); 0 when unknown
	TTFT         time.Duration // from request to the first generated token
	KVUsed       int           // positions in the KV cache
	KVCap        int           // positions the KV cache holds
	KV           KVStats       // paged KV pool and prefix cache
	Quant        string        // weight format of the model answering ("f32", "int8", ...)
	Spec         SpecStats     // speculative decoding of this reply
	Seed         uint64        // the seed this reply was sampled with
	Constraint   ConstraintStats
	Server       ServerStats // chat --remote: what the server reports (Kind "" locally)
}

// ConstraintStats describe the constraint on replies; Spec is "" when
// replies are free.
type ConstraintStats struct {
	Spec     string        // "json", "regex [a-z]+", "schema person.json", ...
	Allowed  int           // token ids the constraint allowed at the last step
	MaskTime time.Duration // mean time to get one step's mask
	Remote   bool          // applied by a --remote server, which reports no masks
}

// ServerStats are what a remote server reports, from its /metrics and the
// usage block of its replies. A figure it does not report is -1, and
// Missing names them all.
type ServerStats struct {
	Kind           string  // "chat", "vllm", "sglang", "llama.cpp", "server" (its /metrics names nothing known); "" for the local engine
	URL            string  // the server
	Model          string  // the model asked for
	Metrics        string  // "" when /metrics was read; otherwise why not ("no /metrics (404)")
	Running        float64 // requests being decoded on the server
	Waiting        float64 // requests queued there
	KVUsage        float64 // fraction of its KV cache in use
	PrefixHitRate  float64 // prompt tokens its prefix cache held, over its life
	Preemptions    float64 // sequences it preempted
	SpecAcceptance float64 // accepted / proposed draft tokens
	Missing        string  // the figures it does not report, comma-separated
}

// KVStats describe the paged KV block pool and the prefix cache; Blocks is
// 0 when the model runs a contiguous cache (no pool).
type KVStats struct {
	Blocks      int     // blocks in the pool
	Used        int     // blocks in use (this conversation's and the prefix cache's)
	Seq         int     // blocks this conversation's sequence holds
	Cached      int     // blocks the prefix tree holds
	BlockSize   int     // positions per block
	Bytes       int64   // the pool's memory (every block, made resident when the pool was created)
	Evictions   int64   // blocks evicted from the prefix cache so far
	LastReuse   float64 // reused / prompt tokens of this reply
	HitRate     float64 // reused / prompt tokens over the engine's life
	TotalReused int     // prompt tokens reused over the engine's life
	TotalPrompt int     // prompt tokens over the engine's life
	FormatK     string  // how keys are stored: "f32", "int8", "fp8" or "int4"
	FormatV     string  // and values
}

// SpecStats describe speculative decoding in the reply; Method is "off" when
// decoding is plain.
type SpecStats struct {
	Method        string      // "off", "draft", "ngram", "lookup"
	K             int         // guesses per round as set (the most, when adapting)
	KNow          int         // guesses of the last round (adapting: the chosen k)
	Note          string      // adapting: what it decided ("off: drafts lost time (0.81× plain)")
	Acceptance    float64     // accepted / proposed guesses
	MeanAccepted  float64     // tokens per round, including the bonus token
	TokensPerPass float64     // generated tokens per target forward pass
	PerPosition   [16]float64 // acceptance rate of the i-th guess of a round, i < K (an array keeps Stats comparable)
}

// Update is what happened since the last Poll: new reply text (whole UTF-8
// characters only), whether the reply finished, and a snapshot of the stats.
type Update struct {
	Text   string // text appended to the reply being generated
	Busy   bool   // a reply is being generated
	Done   bool   // the reply finished since the last poll
	Reason string // why it finished: "eot", "stop" (a stop string), "length", "stopped", "error"
	Err    error  // set when Reason is "error"
	// ContextFull: a "length" reply was cut by the end of the context, not
	// by max_tokens (engine.Result.ContextFull).
	ContextFull bool
	Stats       Stats    // snapshot
	Notices     []string // things the user should be told ("dropped 2 oldest turns to fit the context")

	// The views (views.go), each only while it is on: the reply's tokens
	// since the last poll (token view); the latest step and, in step mode,
	// the next token's distribution before it is drawn (next-token view;
	// they stay set while there is nothing newer); the KV pool's blocks
	// (KV map; the slice is reused by the next Poll).
	Tokens        []Token
	Step, Preview *StepView
	Blocks        []BlockState
}

// Info describes the loaded model and the session mode for the UI.
type Info struct {
	Model         string // file or metadata name
	Arch          string // "modern", "classic", "llama", ...
	Quant         string // "f32", "int8", ...
	Params        int64
	ContextLength int // the window replies run in
	// TrainContext is the context the model was trained for when it is
	// longer than the window (the default window of a 131,072-token model
	// is 4,096; --ctx-size opens it), else 0.
	TrainContext int
	Mode         string // "chat" (template, stops on EOT) or "raw" (plain continuation)
	System       string // the system prompt, "" for none
	Draft        string // the draft model's name, "" for none
}

// ParamCount is a parameter count the way model cards write it (15M, 110M,
// 1.1B), as the header, /show, chat show and the headless line show it.
func ParamCount(n int64) string {
	switch {
	case n <= 0:
		return ""
	case n >= 1e9:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e9), ".0") + "B"
	case n >= 1e6:
		if n >= 100e6 {
			return fmt.Sprintf("%.0fM", float64(n)/1e6)
		}
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	default:
		return fmt.Sprint(n)
	}
}

// ContextText is the window as the header and the headless line show it:
// "ctx 4096", or "ctx 4096 of 131072" when the model was trained for more.
func ContextText(i Info) string {
	if i.TrainContext > i.ContextLength {
		return fmt.Sprintf("ctx %d of %d", i.ContextLength, i.TrainContext)
	}
	return fmt.Sprintf("ctx %d", i.ContextLength)
}
