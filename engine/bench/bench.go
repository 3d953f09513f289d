// Package bench measures prefill and decode speed the way
// ../shared/bench/llamacpp_bench.mjs measures llama.cpp, so that the two JSON
// lines can be divided by ../shared/bench/compare.sh: P prompt tokens (BOS +
// text tokens) in one batched forward pass, then N single-token greedy steps,
// after one untimed warm-up of the same shape. It runs the path the app
// runs: the model's batched forward over sequences in a paged KV pool.
//
// With a batch of B sequences (different prompts), the prefill is one
// forward of all B prompts and each decode step one forward of B tokens, one
// per sequence; the line then also carries the single-sequence decode of
// the same run (batched and single timed in alternating rounds, the fastest
// of each), and a rollout: B prompts generating N tokens each, all together
// against one after another (wall clock, prefill included, once).
package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"chat/models"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/load"
	"chat/models/regular"
)

// Fallback is the prompt text when no file is given or found (the same text
// as the llama.cpp script's fallback).
const Fallback = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. " +
	"One day, she saw a big, red ball. She wanted to play with it, but it was too high. "

// Result is the JSON line of ../shared/bench/README.md.
type Result struct {
	Engine       string  `json:"engine"`
	Model        string  `json:"model"`
	Threads      int     `json:"threads"`
	ISA          string  `json:"isa"`   // the kernels that ran: "avx2", "go", ...
	Batch        int     `json:"batch"` // sequences decoded together
	PromptTokens int     `json:"prompt_tokens"`
	GenTokens    int     `json:"gen_tokens"`
	PPTokS       float64 `json:"pp_tok_s"` // prompt tokens of all sequences / prefill time
	TGTokS       float64 `json:"tg_tok_s"` // tokens of all sequences / decode time
	Timer        string  `json:"timer"`
	Quant        string  `json:"quant"`
	KV           string  `json:"kv"` // how the pool stores keys and values: f32, int8, fp8, int4
	WeightBytes  int64   `json:"weight_bytes"`
	// BandwidthGBs is weight bytes read per decode step × steps/s: compare
	// it with the machine's measured read bandwidth.
	BandwidthGBs float64 `json:"weight_gb_s"`

	// With Batch > 1: the decode speed of one sequence alone in the same
	// run, the aggregate's ratio to it, and the rollout (B prompts × N
	// tokens together vs one by one, wall clock with prefill).
	TGTokSSingle   float64 `json:"tg_tok_s_single,omitempty"`
	BatchSpeedup   float64 `json:"batch_speedup,omitempty"`
	RolloutSpeedup float64 `json:"rollout_speedup,omitempty"`
}

// PromptText is the shared TinyStories text, or Fallback when it is not
// found.
func PromptText() string {
	for _, d := range load.SharedDirs() {
		if b, err := os.ReadFile(filepath.Join(d, "text", "TinyStories-valid-head.txt")); err == nil {
			return string(b)
		}
	}
	return Fallback
}

// MaxTextBytes bounds a text file read by ReadText (tokenized whole; the
// shared sample is 30 KB).
const MaxTextBytes = 8 << 20

// ReadText is the text of file (a regular file or a pipe of at most
// MaxTextBytes: /dev/zero would read without end), or with no file
// PromptText: the text of a benchmark's prompt.
func ReadText(file string) (string, error) {
	if file == "" {
		return PromptText(), nil
	}
	b, err := regular.ReadFile(file, MaxTextBytes)
	return string(b), err
}

// NeedText is ReadText for a text that measures or calibrates (a
// calibration, a held-out loss), which Fallback's two sentences cannot:
// without a file and the shared text it is an error naming flag, the
// option that gives a file.
func NeedText(file, flag string) (string, error) {
	t, err := ReadText(file)
	if err == nil && t == Fallback {
		err = fmt.Errorf("no text found: the default, text/TinyStories-valid-head.txt, is neither under $CHAT_SHARED_MODELS nor under ../shared/models from this folder: give one with %s FILE", flag)
	}
	return t, err
}

// batchRounds is how many alternating rounds of batched and single decode
// a batched run times (each side keeps its fastest): llama-bench's default
// repetitions (-r 5). With 3, the one-sequence side, bound by the host's
// memory bandwidth, swung by a fifth between runs on a shared host.
const batchRounds = 5

// Run measures m with promptTokens tokens of text and genTokens decode
// steps, for batch sequences at once, over a pool storing keys and values
// as kv.
func Run(m models.Model, text string, threads, promptTokens, genTokens, batch int, kv kvcache.Format) (Result, error) {
	return RunBeside(m, text, threads, promptTokens, genTokens, batch, kv, nil)
}

// RunBeside is Run with beside called after each decode step of the timed
// run (not of the warm-up), outside the decode's time: something to
// measure under the same load as the steps, interleaved with them.
func RunBeside(m models.Model, text string, threads, promptTokens, genTokens, batch int, kv kvcache.Format, beside func()) (Result, error) {
	info := m.Info()
	if promptTokens < 1 || genTokens < 1 || batch < 1 {
		return Result{}, fmt.Errorf("bench: prompt and gen tokens and the batch must be positive")
	}
	if promptTokens+genTokens > info.ContextLength {
		return Result{}, fmt.Errorf("bench: %d prompt + %d generated tokens exceed the model's %d-token context", promptTokens, genTokens, info.ContextLength)
	}
	b, err := newBatch(m, batch, promptTokens+genTokens, kv)
	if err != nil {
		return Result{}, err
	}
	b.setPrompts(text, promptTokens)

	if _, _, err := b.run(batch, min(promptTokens, 512), min(8, genTokens)); err != nil { // warm-up
		return Result{}, err
	}
	b.beside = beside
	pp, tg, err := b.run(batch, promptTokens, genTokens)
	b.beside = nil
	if err != nil {
		return Result{}, err
	}
	// With a batch, the batched and the single decode are timed in
	// alternating rounds and each keeps its fastest: on a shared machine a
	// busy spell then does not fall on one side of the ratio only.
	var tg1 time.Duration
	for round := 0; batch > 1 && round < batchRounds; round++ {
		if round > 0 {
			p, t, err := b.run(batch, promptTokens, genTokens)
			if err != nil {
				return Result{}, err
			}
			pp, tg = min(pp, p), min(tg, t)
		}
		_, t1, err := b.run(1, promptTokens, genTokens)
		if err != nil {
			return Result{}, err
		}
		if round == 0 || t1 < tg1 {
			tg1 = t1
		}
	}
	r := Result{
		Engine: "chat", Model: info.Name, Threads: threads, ISA: kernels.ISA(), Batch: batch,
		PromptTokens: promptTokens, GenTokens: genTokens,
		PPTokS: round1(float64(batch*promptTokens) / pp.Seconds()), TGTokS: round1(float64(batch*genTokens) / tg.Seconds()),
		Timer: "go_wall", Quant: info.Quant, KV: kv.String(), WeightBytes: info.WeightBytes,
	}
	r.BandwidthGBs = round1(float64(info.WeightBytes) * float64(genTokens) / tg.Seconds() / 1e9)
	if batch > 1 {
		r.TGTokSSingle = round1(float64(genTokens) / tg1.Seconds())
		r.BatchSpeedup = round2(r.TGTokS / r.TGTokSSingle)
		t0 := time.Now()
		if _, _, err := b.run(batch, promptTokens, genTokens); err != nil {
			return Result{}, err
		}
		together := time.Since(t0)
		t0 = time.Now()
		for i := 0; i < batch; i++ {
			b.prompts[0], b.prompts[i] = b.prompts[i], b.prompts[0]
			if _, _, err := b.run(1, promptTokens, genTokens); err != nil {
				return Result{}, err
			}
		}
		r.RolloutSpeedup = round2(time.Since(t0).Seconds() / together.Seconds())
	}
	return r, nil
}

// batchRun holds the sequences, runner and buffers of a run.
type batchRun struct {
	m       models.Model
	runner  models.Runner
	seqs    []*kvcache.Seq
	kv      []models.KV
	prompts [][]int // P+1 ids each: the prompt and the first decode input
	b       models.Batch
	next    []int
	beside  func() // RunBeside's, after each decode step, untimed
}

func newBatch(m models.Model, n, positions int, kv kvcache.Format) (*batchRun, error) {
	bs := kvcache.DefaultBlockSize
	// Twice the blocks the batch needs, as an engine's pool has room to
	// spare: room for the pool to keep each sequence's blocks adjacent
	// (kvcache.Pool.Alloc).
	pool, err := kvcache.NewPool(kvcache.LayoutOf(m, kv, kv), bs, 2*n*((positions+bs-1)/bs+1))
	if err != nil {
		return nil, err
	}
	r := &batchRun{m: m, runner: m.NewRunner(), prompts: make([][]int, n), next: make([]int, n)}
	for range n {
		s := pool.NewSeq(m.Info().ContextLength)
		r.seqs, r.kv = append(r.seqs, s), append(r.kv, s)
	}
	return r, nil
}

// setPrompts gives each sequence np prompt tokens of text and a first
// decode input, read from its own offset: different prompts.
func (r *batchRun) setPrompts(text string, np int) {
	all := promptTokens1(r.m.Tokenizer(), text, np+1+len(r.prompts)*7)
	for i := range r.prompts {
		p := append([]int(nil), all[:1]...) // BOS (or the first token)
		p = append(p, all[1+i*7:]...)
		r.prompts[i] = p[:np+1]
	}
}

// maxPrefillTokens bounds the tokens of one prefill pass: the prompts of a
// large batch are fed in parts of this many, as the engine's steps feed
// them, so the pass's activations stay bounded (--batch 2000 of 128-token
// prompts took 5 GB in one pass on a 15M model). The models run 64-token
// passes within it either way.
const maxPrefillTokens = 4096

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run prefills np prompt tokens of the first n sequences, batched, then
// takes ng greedy steps of all n together, and returns both times.
func (r *batchRun) run(n, np, ng int) (pp, tg time.Duration, err error) {
	for _, s := range r.seqs {
		s.Truncate(0)
	}
	kv := r.kv[:n]
	r.b.Reset()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		for at := 0; at < np; {
			k := min(np-at, maxPrefillTokens-r.b.Len())
			r.b.AddRun(i, at, r.prompts[i][at:at+k], boolInt(at+k == np))
			at += k
			if r.b.Len() == maxPrefillTokens || i == n-1 && at == np {
				if _, err := r.runner.Forward(&r.b, kv); err != nil {
					return 0, 0, err
				}
				r.b.Reset()
			}
		}
	}
	pp = time.Since(t0)
	for i := 0; i < n; i++ {
		r.next[i] = r.prompts[i][np]
	}
	for step := 0; step < ng; step++ {
		t1 := time.Now()
		if err := r.step(n); err != nil {
			return 0, 0, err
		}
		tg += time.Since(t1)
		if r.beside != nil {
			r.beside()
		}
	}
	return pp, tg, nil
}

// step is one greedy decode step of the first n sequences together: each
// is fed its next id, and its next id is the argmax of its logits.
func (r *batchRun) step(n int) error {
	r.b.Reset()
	for i := 0; i < n; i++ {
		r.b.Add(i, r.seqs[i].Len(), r.next[i], true)
	}
	logits, err := r.runner.Forward(&r.b, r.kv[:n])
	if err != nil {
		return err
	}
	V := r.m.Info().VocabSize
	for i := 0; i < n; i++ {
		r.next[i] = max(kernels.Argmax(logits[i*V:(i+1)*V]), 0)
	}
	return nil
}

// promptTokens1 is BOS + the text's tokens, the text repeated until there are n.
func promptTokens1(tok models.Tokenizer, text string, n int) []int {
	ids := tok.Encode(text)
	if len(ids) == 0 {
		ids = tok.Encode(Fallback)
	}
	var out []int
	if b := tok.BOS(); b >= 0 {
		out = append(out, b)
	}
	for len(out) < n {
		out = append(out, ids[:min(len(ids), n-len(out))]...)
	}
	return out
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
