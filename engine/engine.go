// Package engine runs generation: it owns one model, its KV cache (State),
// a sampler and an incremental detokenizer, and decodes one reply at a time
// in its own goroutine. Text comes back through a coalescing buffer that the
// UI drains on its own tick (Reply.Poll), so a slow UI never slows decoding.
//
// The path of one token: prefill what the cache lacks (prefix.go) → forward
// with rows=1 → sampler → stop rule (stop.go) → detok → reply buffer, and
// the model's window rule decides how the next token is fed (window.go).
//
// The KV cache (paged.go): a model with a paged path (models.PagedModel:
// the course models and llama) runs over a block pool (engine/kvcache) with
// a radix prefix cache (engine/prefix), so every reply starts from the
// longest prefix cached by any earlier reply — a new turn, a regenerated
// reply, an edited message, another conversation with the same system
// prompt — and prefills only the rest. Other models keep one contiguous
// State and reuse the common prefix with the last reply only.
//
// With SetSpeculation on, a step is a round instead (speculate.go): a
// drafter guesses a few ids, one forward of the target over them scores
// all, and speculative.Verify keeps a prefix plus one id; the output has
// exactly the distribution of the plain path (greedy: the same ids).
package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"chat/engine/constrain"
	"chat/engine/detok"
	"chat/engine/kvcache"
	"chat/engine/prefix"
	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
)

// Request is one reply to generate.
type Request struct {
	Prompt    []int          // full prompt ids (the engine reuses the longest common prefix already in its cache)
	MaxTokens int            // budget of new tokens (> 0), stop ids included
	Sampler   sampler.Params // initial knobs
	StopIDs   []int          // stop when one is sampled (not emitted as text, not in Result.IDs); e.g. the EOT
	// OnText is optional: it is called from the engine goroutine with each
	// new piece of text (headless printing). Generation waits for it, and it
	// must not call Reply.Wait or Engine.Close (they wait for the engine).
	OnText func(string)
	// Constraint, if set, limits the reply to outputs it accepts
	// (constraint.go); its end ids are StopIDs, or the tokenizer's EOT when
	// there are none. nil: no constraint.
	Constraint constrain.Constraint
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

	// The paged KV pool and prefix cache (paged.go); all zero when the
	// engine runs a contiguous cache.
	PoolBlocks int    // blocks in the pool
	PoolUsed   int    // blocks held by the sequence or the prefix tree
	SeqBlocks  int    // blocks this conversation's sequence holds
	TreeBlocks int    // blocks the prefix tree holds
	BlockSize  int    // positions per block
	Evictions  int64  // blocks evicted from the prefix tree since the engine started
	KVFormatK  string // how the pool stores keys: "f32" or "int8"
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
}

// Delta is what Poll drains.
type Delta struct {
	Text   string // text since the last Poll
	Done   bool   // the reply has finished and Text holds its last piece
	Result Result // valid when Done
	Stats  Stats  // snapshot
}

// ErrBusy is returned by Start while a reply is running.
var ErrBusy = errors.New("engine: a reply is already running")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("engine: closed")

// Engine generates replies with one model. Its methods are safe for
// concurrent use; generation itself runs in the engine's goroutine.
type Engine struct {
	// Owned by the engine goroutine (and read by Start only before it runs).
	model  models.Model
	tok    models.Tokenizer
	st     models.State
	info   models.Info
	vocab  int
	window int
	smp    *sampler.Sampler
	dec    detok.Decoder
	cached []int       // ids whose K/V are in st at positions 0..len-1
	ctx    []int       // prompt + generated ids of the running reply
	err    error       // set when the model is unusable
	rows   [][]float64 // speculation's target distributions, kept across replies

	// Paged cache (paged.go); pool is nil for a contiguous State.
	pool        *kvcache.Pool
	tree        *prefix.Tree
	seq         *kvcache.Seq // e.st's cache
	lockAt      prefix.Node  // the tree path the running reply matched
	locked      bool
	identity    string // the model's name in KV files
	totalPrompt int
	totalReused int

	mu      sync.Mutex
	running *Reply
	closed  bool
	params  sampler.Params // latest SetSampler knobs
	paramsV atomic.Uint64  // bumped by every SetSampler and Start
	spec    speculative.Config
	drafter speculative.Drafter // nil: plain decoding; used by one reply at a time

	jobs      chan *Reply
	done      chan struct{}
	closeOnce sync.Once
}

// New returns an engine for m and starts its goroutine; Close stops it. A
// model with a paged path (models.PagedModel) runs over a KV block pool with
// a prefix cache of the default size (see NewWithOptions).
func New(m models.Model) *Engine { return newEngine(m, Options{}) }

func newEngine(m models.Model, o Options) *Engine {
	e := &Engine{jobs: make(chan *Reply, 1), done: make(chan struct{})}
	if m == nil {
		e.err = errors.New("engine: no model")
	} else {
		e.model, e.info, e.tok = m, m.Info(), m.Tokenizer()
		if err := e.newCache(m, o); err != nil {
			e.err = err
			go e.loop()
			return e
		}
		e.vocab = e.info.VocabSize
		if e.vocab <= 0 && e.tok != nil {
			e.vocab = e.tok.Size()
		}
		e.window = e.st.Cap()
		if c := e.info.ContextLength; c > 0 && c < e.window {
			e.window = c
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
			e.smp = sampler.New(e.vocab, sampler.Params{})
		}
	}
	go e.loop()
	return e
}

// Model is the model the engine runs.
func (e *Engine) Model() models.Model { return e.model }

// Window is the number of positions generation sees (min(context, Cap)).
func (e *Engine) Window() int { return e.window }

// Start begins a reply. It fails if a reply is running, the engine is
// closed, or the request is invalid.
func (e *Engine) Start(req Request) (*Reply, error) {
	if e.err != nil {
		return nil, e.err
	}
	if err := e.validate(req); err != nil {
		return nil, err
	}
	req.Prompt = append([]int(nil), req.Prompt...) // the caller may reuse its slice
	req.StopIDs = append([]int(nil), req.StopIDs...)
	if req.Constraint != nil && len(req.StopIDs) == 0 && e.tok.EOT() >= 0 {
		req.StopIDs = []int{e.tok.EOT()} // a constrained output needs an end
	}
	r := &Reply{req: req, start: time.Now(), done: make(chan struct{})}

	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return nil, ErrClosed
	case e.running != nil:
		return nil, ErrBusy
	}
	e.running = r
	r.spec, r.drafter = e.spec, e.drafter
	e.params = req.Sampler
	e.paramsV.Add(1)
	e.jobs <- r // never blocks: the buffer is empty while nothing runs
	return r, nil
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

// SetSampler changes the knobs from the next token of the running reply on
// (a reply started later uses its Request.Sampler). A changed Seed re-seeds
// the RNG. Invalid knobs (see sampler.Params.Validate) are ignored.
func (e *Engine) SetSampler(p sampler.Params) {
	if p.Validate() != nil {
		return
	}
	e.mu.Lock()
	e.params = p
	e.paramsV.Add(1)
	e.mu.Unlock()
}

// Close stops the running reply (Reason "stopped"), waits for it and ends
// the engine goroutine. It is safe to call more than once.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		if e.running != nil {
			e.running.Stop()
		}
		close(e.jobs)
		e.mu.Unlock()
		<-e.done
	})
}

func (e *Engine) loop() {
	defer close(e.done)
	for r := range e.jobs {
		res := e.generate(r)
		e.mu.Lock()
		e.running = nil
		e.mu.Unlock()
		r.finish(res)
	}
}

// latestParams returns the knobs if SetSampler or Start changed them since
// version seen.
func (e *Engine) latestParams(seen uint64) (sampler.Params, uint64, bool) {
	v := e.paramsV.Load()
	if v == seen {
		return sampler.Params{}, seen, false
	}
	e.mu.Lock()
	p := e.params
	v = e.paramsV.Load()
	e.mu.Unlock()
	return p, v, true
}
