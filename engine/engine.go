// Package engine runs generation: one model, a set of sequences decoding
// together, their KV caches in one paged pool with a radix prefix cache,
// and per reply a sampler and an incremental detokenizer. Text comes back
// through a coalescing buffer that the UI drains on its own tick
// (Reply.Poll), so a slow UI never slows decoding.
//
// Each reply runs in its own goroutine, written as one sequence's loop: the
// path of one token is knobs → sample → stop rule (stop.go) → detok → reply
// buffer, and the model's window rule decides how the next token is fed
// (window.go). Every forward pass a reply asks for goes through the batcher
// (batch.go): the replies running at the same time meet there and their
// tokens — a prefill here, a decode token there, a speculative round — go
// through the model as one batch that reads each weight once.
//
// The KV cache (cache.go): every reply's sequence is a block table into the
// engine's pool (models/kvcache); the radix tree (engine/prefix) keeps the
// blocks of finished replies, so a new turn, a regenerated reply, an edited
// message or another conversation with the same system prompt starts from
// the longest cached prefix and prefills only the rest.
//
// With SetSpeculation on, a step is a round instead (speculate.go): a
// drafter guesses a few ids, one forward of the target over them scores all,
// and speculative.Verify keeps a prefix plus one id; the output has exactly
// the distribution of the plain path (greedy: the same ids).
package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"chat/engine/constrain"
	"chat/engine/prefix"
	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/kvcache"
)

// Request is one reply to generate.
type Request struct {
	Prompt    []int          // full prompt ids (the engine reuses the longest prefix already cached)
	MaxTokens int            // budget of new tokens (> 0), stop ids included
	Sampler   sampler.Params // initial knobs
	StopIDs   []int          // stop when one is sampled (not emitted as text, not in Result.IDs); e.g. the EOT
	Stop      []string       // stop where one of these texts appears; the text is cut before it (stopstr.go)
	// OnText is optional: it is called from the reply's goroutine with each
	// new piece of text (headless printing). Generation waits for it, and it
	// must not call Reply.Wait or Engine.Close (they wait for the reply).
	OnText func(string)
	// Constraint, if set, limits the reply to outputs it accepts
	// (constraint.go); its end ids are StopIDs, or the tokenizer's EOT when
	// there are none. nil: no constraint.
	Constraint constrain.Constraint
	// Logprobs records each generated token's log-probability and the
	// TopLogprobs (≤ MaxTopLogprobs) likeliest ids at its step (logprobs.go).
	Logprobs    bool
	TopLogprobs int
	// Observe is what the reply records for watchers from its start
	// (observe.go; Reply.SetObserve changes it), and Step starts it in step
	// mode (stepmode.go).
	Observe Observe
	Step    bool
	// OnStep, if set, gets the full record of every step (a token, or a
	// speculative round), from the reply's goroutine; generation waits for
	// it, and the record is reused after it returns.
	OnStep func(*StepRecord)
}

// Stats are the counters the panels and headless --json show.
type Stats struct {
	PromptTokens int           // len(Request.Prompt)
	ReusedTokens int           // prompt ids whose K/V were already cached
	GenTokens    int           // tokens sampled, a stop id included
	PrefillTokS  float64       // prefilled tokens / prefill forward time
	DecodeTokS   float64       // tokens after the first / time since the first
	TTFT         time.Duration // Start to the first sampled token
	KVUsed       int           // cache positions in use after the last step
	KVCap        int           // cache positions available (the window)
	WindowCuts   int           // times the window rule cut the text: a prompt longer than the window, each refill when it filled (window.go)
	BatchSeqs    int           // sequences in the last forward pass this reply was part of

	// The paged KV pool and prefix cache (cache.go).
	PoolBlocks int    // blocks in the pool
	PoolUsed   int    // blocks held by sequences or the prefix tree
	SeqBlocks  int    // blocks this reply's sequence holds
	TreeBlocks int    // blocks the prefix tree holds
	BlockSize  int    // positions per block
	Evictions  int64  // blocks evicted from the prefix tree since the engine started
	KVFormatK  string // how the pool stores keys: "f32", "f16", "int8", "fp8" or "int4"
	KVFormatV  string // and values
	BlockBytes int64  // bytes one block takes (all layers, keys and values)

	// Reuse over the engine's life (every reply since New, this one
	// included): prompt ids, those whose K/V were cached, and their ratio.
	TotalPromptTokens int
	TotalReusedTokens int
	HitRate           float64

	// The constraint (zero without one): ids allowed at the last step, and
	// the mean time to get a step's mask.
	MaskAllowed int
	MaskTime    time.Duration

	// Spec counts draft-then-verify decoding (Spec.Method is Off when the
	// reply decoded plainly): acceptance rate, mean tokens per round,
	// tokens per target pass, acceptance per draft position.
	Spec speculative.Stats
}

// Reasons a reply ends (Result.Reason).
const (
	ReasonEOT     = "eot"     // a stop id was sampled
	ReasonLength  = "length"  // MaxTokens reached
	ReasonStopped = "stopped" // Reply.Stop or Engine.Close
	ReasonError   = "error"   // the model failed; see Result.Err
)

// Result is a finished reply.
type Result struct {
	IDs    []int  // generated ids, without the stop id
	Text   string // their text (all pieces, flushed)
	Reason string // ReasonEOT, ReasonLength, ReasonStopped or ReasonError
	StopID int    // the stop id that ended it, or -1
	Err    error
	Stats  Stats
	// Logprobs has one entry per id of IDs when Request.Logprobs is set.
	Logprobs []TokenLogprob
}

// ContextFull reports whether the end of the context, not the budget asked
// for, cut the reply: it reached its budget as prompt and reply filled the
// window (a chat reply's budget, and a server's, is at most the context
// left; the last id is not fed, so a full window holds all but one). A reply
// the window rule cut had room again, so its budget ended it.
func (r *Result) ContextFull() bool {
	st := r.Stats
	return r.Reason == ReasonLength && st.WindowCuts == 0 && st.KVCap > 0 && st.PromptTokens+st.GenTokens >= st.KVCap
}

// Delta is what Poll drains.
type Delta struct {
	Text     string         // text since the last Poll
	Logprobs []TokenLogprob // with Request.Logprobs: the tokens since the last Poll
	Marks    []Mark         // with ObserveTokens: the tokens since the last Poll
	Step     *StepRecord    // with ObserveSteps: the latest step's record, when there is a new one
	Preview  *StepRecord    // in step mode with ObserveSteps: the next token's distribution, when there is a new one (stale once a Step of its Token or later arrives)
	Done     bool           // the reply has finished and Text holds its last piece
	Result   Result         // valid when Done
	Stats    Stats          // snapshot
}

// ErrBusy is returned by Start while Options.MaxSeqs replies are running
// and Options.MaxWaiting are waiting.
var ErrBusy = errors.New("engine: a reply is already running")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("engine: closed")

// Options configure an engine.
type Options struct {
	// KVMem is the KV block pool's budget in bytes (0: DefaultKVMem). It is
	// raised to the minimum MaxSeqs full windows need (MinKVBlocks each).
	KVMem int64
	// NoPrefixCache turns the radix prefix cache off: a reply reuses only
	// the prefix it shares with the last reply.
	NoPrefixCache bool
	// BlockSize is the positions per block (0: kvcache.DefaultBlockSize).
	BlockSize int
	// KVQuantK and KVQuantV are how the pool stores keys and values: "" or
	// "auto" (kvcache.Auto: f16 for a GGUF model, f32 for a course
	// checkpoint); "f32" (float32 rows); "f16"; "int8" or "fp8" (E4M3), a float32 scale per
	// position and KV head; "int4", a scale per 32 values of a head (see
	// models/kvcache/quant.go). A quantized block is smaller, so KVMem buys
	// more of them; a KV file is imported only by a pool of its formats.
	KVQuantK, KVQuantV string
	// MaxSeqs is how many replies may run at once, decoding together in
	// shared batches (0: 1, one conversation).
	MaxSeqs int
	// Context is the positions a sequence holds (0: the model's context
	// length): the window rule applies at this length. It may exceed the
	// model's ContextLength up to its TrainContext (a model trained for
	// 131,072 positions runs a 4,096 window unless asked for more).
	Context int
	// MaxWaiting is how many replies may wait for one of the MaxSeqs places
	// (schedule.go); Start returns ErrBusy beyond it. 0: none wait. With a
	// queue the pool is what KVMem buys (at least one window): a sequence
	// that finds it full is preempted and recomputed later.
	MaxWaiting int
	// MaxBatchTokens bounds the tokens of one forward pass (vLLM's
	// max_num_batched_tokens): decode tokens first, then prompt chunks of
	// at most a quarter of it beside decode tokens and half of it alone
	// (chunkMax), so a long prompt is prefilled over several steps while
	// the others keep decoding. 0: no bound.
	MaxBatchTokens int
}

// DefaultKVMem is the pool budget when Options.KVMem is 0: 256 MiB, or 16
// full windows if that is less.
const DefaultKVMem = 256 << 20

// Engine generates replies with one model. Its methods are safe for
// concurrent use.
type Engine struct {
	model    models.Model
	tok      models.Tokenizer
	control  models.ControlTokens // tok, when its vocabulary marks control tokens; else nil
	info     models.Info
	vocab    int
	window   int
	maxSeqs  int
	err      error // set when the model is unusable
	identity string
	b        batcher
	q        sched            // the waiting queue and the step's token budget (schedule.go)
	now      func() time.Time // the clock adapt's measurements read (time.Now; a test's own)

	// The KV pool, the prefix tree, the last finished reply's sequence and
	// the reuse totals, guarded by kvmu.
	kvmu        sync.Mutex
	pool        *kvcache.Pool
	tree        *prefix.Tree // nil without the prefix cache
	last        *kvcache.Seq // the last finished reply's cache (nil: none)
	lastIDs     []int        // the ids at last's positions
	totalPrompt int
	totalReused int
	bmap        blockMapState // BlockMap's memory of the last map

	mu          sync.Mutex
	running     int
	closed      bool
	replies     map[*Reply]bool
	spec        speculative.Config
	drafter     speculative.Drafter // nil: plain decoding; used by one reply at a time
	drafterBusy bool
	wg          sync.WaitGroup

	samplers chan *sampler.Sampler // finished replies' samplers, up to MaxSeqs (newSampler)

	brkMu    sync.Mutex
	breakers *breakersEntry // DRY's sequence breakers in this vocabulary, the last asked for (breakersFor)
}

// New returns an engine for m.
func New(m models.Model) *Engine { return NewWithOptions(m, Options{}) }

// NewWithOptions is New with options.
func NewWithOptions(m models.Model, o Options) *Engine {
	e := &Engine{maxSeqs: max(o.MaxSeqs, 1), replies: map[*Reply]bool{}, now: time.Now}
	e.samplers = make(chan *sampler.Sampler, e.maxSeqs)
	e.q = sched{maxWait: max(o.MaxWaiting, 0), budget: max(o.MaxBatchTokens, 0), startWait: startWait}
	if m == nil {
		e.err = errors.New("engine: no model")
		return e
	}
	e.model, e.info, e.tok = m, m.Info(), m.Tokenizer()
	e.control, _ = e.tok.(models.ControlTokens)
	e.vocab = e.info.VocabSize
	e.window = e.info.ContextLength
	if o.Context > 0 {
		e.window = min(o.Context, e.info.MaxContext())
	}
	if w, ok := m.(models.Windowed); ok && e.window > 0 {
		m = w.ForWindow(e.window) // LongRoPE's factors follow the window
		e.model = m
	}
	switch {
	case e.vocab <= 0:
		e.err = errors.New("engine: model has an empty vocabulary")
	case e.window <= 0:
		e.err = errors.New("engine: model has no context")
	case e.tok == nil:
		e.err = errors.New("engine: model has no tokenizer")
	}
	if e.err == nil {
		e.err = e.newCache(m, o)
	}
	e.b.init(e)
	return e
}

// Err is why the engine cannot run (no KV pool fits, a model without a
// vocabulary), nil when it can: every request would fail with it.
func (e *Engine) Err() error { return e.err }

// Model is the model the engine runs.
func (e *Engine) Model() models.Model { return e.model }

// Window is the number of positions generation sees.
func (e *Engine) Window() int { return e.window }

// MaxSeqs is how many replies run at once (Options.MaxSeqs, at least 1).
func (e *Engine) MaxSeqs() int { return e.maxSeqs }

// Start begins a reply, or queues it while Options.MaxSeqs replies run
// (schedule.go). It fails if the queue is full too (ErrBusy), the engine is
// closed, or the request is invalid.
func (e *Engine) Start(req Request) (*Reply, error) {
	if e.err != nil {
		return nil, e.err
	}
	if err := e.validate(req); err != nil {
		return nil, err
	}
	e.q.starting.Add(1) // the next step waits for this admission (awaitStarts)
	defer e.q.starting.Add(-1)
	req.Prompt = append([]int(nil), req.Prompt...) // the caller may reuse its slice
	req.StopIDs = append([]int(nil), req.StopIDs...)
	if req.Constraint != nil && len(req.StopIDs) == 0 && e.tok.EOT() >= 0 {
		req.StopIDs = []int{e.tok.EOT()} // a constrained output needs an end
	}
	r := newReply(req)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if !e.enqueue(r) {
		return nil, ErrBusy
	}
	e.replies[r] = true
	e.wg.Add(1)
	go e.run(r)
	return r, nil
}

// run generates r in its own goroutine, once it is admitted (schedule.go).
func (e *Engine) run(r *Reply) {
	defer e.wg.Done()
	var res Result
	if e.wait(r) {
		res = e.generate(r)
	} else {
		res = Result{Reason: ReasonStopped, StopID: -1, Stats: Stats{PromptTokens: len(r.req.Prompt), KVCap: e.window}}
	}
	e.mu.Lock()
	e.release(r)
	delete(e.replies, r)
	e.mu.Unlock()
	r.finish(res)
}

func (e *Engine) validate(req Request) error {
	if len(req.Prompt) == 0 {
		return errors.New("engine: empty prompt: the model needs at least one token to continue")
	}
	for i, id := range req.Prompt {
		if id < 0 || id >= e.vocab {
			return fmt.Errorf("engine: prompt id %d at index %d is outside the vocabulary 0..%d", id, i, e.vocab-1)
		}
	}
	if req.MaxTokens <= 0 {
		return fmt.Errorf("engine: MaxTokens is %d; it must be > 0", req.MaxTokens)
	}
	return req.Sampler.Validate()
}

// SetSampler changes the knobs of every running reply from its next token
// on (see Reply.SetSampler; a reply started later uses its
// Request.Sampler). Invalid knobs (see sampler.Params.Validate) are ignored.
func (e *Engine) SetSampler(p sampler.Params) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for r := range e.replies {
		r.SetSampler(p)
	}
}

// Close stops the running replies (Reason "stopped"), waits for them and
// frees the cache. It is safe to call more than once.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	for r := range e.replies {
		r.Stop()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// idle runs f while no reply runs (and none can start).
func (e *Engine) idle(f func() error) error {
	if e.err != nil {
		return e.err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrClosed
	case e.running > 0:
		return ErrBusy
	}
	return f()
}
