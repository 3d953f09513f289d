package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/course"
	"chat/models/kvcache"
	"chat/models/llama"
	"chat/models/testmodels"
)

func loadModel(t testing.TB, rel string) models.Model {
	t.Helper()
	p := testmodels.Path(t, rel)
	var m models.Model
	var err error
	if strings.HasSuffix(p, ".gguf") {
		m, err = llama.Load(p)
	} else {
		m, err = course.Load(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// chatScript is the scripted chat: a system prompt, then a user line per
// turn (one more than the 10 turns, for the prompt after the last).
var chatScript = []string{
	"Once upon a time there was a little cat who lived in a big house.",
	"Tom went to the park.", "He saw a dog.", "The dog was happy.", "They played ball.",
	"Then it rained.", "They ran home.", "Mom made soup.", "Tom was sleepy.", "He went to bed.", "The end.", "Good night.",
}

// turnPrompt is the prompt of turn t: the previous prompt, the previous
// reply and its stop id, and the next user line.
func turnPrompt(tok models.Tokenizer, prev []int, reply []int, line string) []int {
	p := slices.Clone(prev)
	if prev == nil {
		if b := tok.BOS(); b >= 0 {
			p = append(p, b)
		}
		p = append(p, tok.Encode(chatScript[0])...)
	}
	p = append(p, reply...)
	if eot := tok.EOT(); eot >= 0 && prev != nil {
		p = append(p, eot)
	}
	return append(p, tok.Encode(" "+line)...)
}

// probe runs one id on the last reply's cache and returns the logits,
// leaving the cache as it was (the engine is idle).
func probe(t testing.TB, e *Engine, id int) []float32 {
	t.Helper()
	n := e.last.Len()
	l, err := models.NewState(e.model, e.last).Forward([]int{id}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l = slices.Clone(l)
	e.last.Truncate(n)
	return l
}

// runChat runs the 10-turn chat greedily on e and returns every turn's
// result and the probe logits after each turn.
func runChat(t testing.TB, e *Engine) ([]Result, [][]float32) {
	t.Helper()
	res, probes, _ := chatTurns(t, e, 10, true)
	return res, probes
}

// chatTurns runs the first n turns of the chat on e; it returns their
// results, the probes (if asked) and the prompt of turn n+1.
func chatTurns(t testing.TB, e *Engine, n int, probes bool) ([]Result, [][]float32, []int) {
	t.Helper()
	tok := e.Model().Tokenizer()
	var prompt, reply []int
	var res []Result
	var pr [][]float32
	for turn := 1; turn <= n+1; turn++ {
		prompt = turnPrompt(tok, prompt, reply, chatScript[turn])
		if turn > n {
			break
		}
		r := run(t, e, chatRequest(tok, prompt))
		res = append(res, r)
		if probes {
			pr = append(pr, probe(t, e, 1))
		}
		reply = r.IDs
	}
	return res, pr, prompt
}

func chatRequest(tok models.Tokenizer, prompt []int) Request {
	return Request{Prompt: prompt, MaxTokens: 8, Sampler: sampler.Params{Greedy: true}, StopIDs: []int{tok.EOT()}}
}

// BenchmarkTTFTTurn10 is the time to the first token of turn 10 of the
// scripted chat (turns 1-9 run untimed first): with the prefix cache (paged
// models only), with the contiguous cache that reuses the common prefix with
// the last reply only, and cold (a fresh engine prefills the whole prompt).
// ttft-ms is the engine's own TTFT (Start to the first sampled id). Run with
//
//	go test ./engine -run '^$' -bench TTFTTurn10 -benchtime 10x
func BenchmarkTTFTTurn10(b *testing.B) {
	for _, rel := range []string{"course/student.pt", "stories260K/stories260K.gguf"} {
		m := loadModel(b, rel)
		for _, mode := range []struct {
			name string
			opts Options
			cold bool
		}{
			{"prefix-cache", Options{}, false},
			{"lcp-only", Options{NoPrefixCache: true}, false},
			{"cold", Options{NoPrefixCache: true}, true},
		} {
			b.Run(rel+"/"+mode.name, func(b *testing.B) {
				var ttft time.Duration
				var reused, prompt int
				for range b.N {
					b.StopTimer()
					e := NewWithOptions(m, mode.opts)
					_, _, p10 := chatTurns(b, e, 9, false)
					if mode.cold {
						e.Close()
						e = NewWithOptions(m, mode.opts)
					}
					b.StartTimer()
					r := run(b, e, chatRequest(m.Tokenizer(), p10))
					b.StopTimer()
					ttft += r.Stats.TTFT
					reused, prompt = r.Stats.ReusedTokens, r.Stats.PromptTokens
					e.Close()
				}
				b.ReportMetric(float64(ttft.Microseconds())/1000/float64(b.N), "ttft-ms")
				b.ReportMetric(float64(reused), "reused")
				b.ReportMetric(float64(prompt), "prompt")
			})
		}
	}
}

// TestPrefixCacheChat10Turns: the 10-turn chat gives the same greedy ids
// and bit-identical logits (a probe after every turn) with the prefix cache
// on and off, on student.pt (paged) and stories260K (whichever path the model
// has), over a float32 KV cache and over int8, fp8 and int4 ones (a cached
// quantized block holds the codes the uncached run writes again); with the
// cache on, ≥ 90 % of the prompt ids after turn 1 come from the cache.
func TestPrefixCacheChat10Turns(t *testing.T) {
	for _, rel := range []string{"course/student.pt", "stories260K/stories260K.gguf"} {
		for _, f := range append([]string{"f32"}, quantKV...) {
			t.Run(rel+"/kv-"+f, func(t *testing.T) { testPrefixCacheChat10Turns(t, rel, f) })
		}
	}
}

func testPrefixCacheChat10Turns(t *testing.T, rel, f string) {
	m := loadModel(t, rel)
	o := kvOpts(f)
	on := NewWithOptions(m, o)
	o.NoPrefixCache = true
	off := NewWithOptions(m, o)
	defer on.Close()
	defer off.Close()
	a, pa := runChat(t, on)
	b, pb := runChat(t, off)
	prompt, reused := 0, 0
	for i := range a {
		if !slices.Equal(a[i].IDs, b[i].IDs) {
			t.Fatalf("turn %d: ids with the prefix cache %v, without %v", i+1, a[i].IDs, b[i].IDs)
		}
		if !slices.Equal(pa[i], pb[i]) {
			t.Fatalf("turn %d: probe logits differ", i+1)
		}
		if a[i].Stats.KVUsed >= on.Window() {
			t.Fatalf("turn %d: the chat outgrew the window (%d)", i+1, on.Window())
		}
		if i > 0 {
			prompt += a[i].Stats.PromptTokens
			reused += a[i].Stats.ReusedTokens
		}
	}
	st := a[9].Stats
	frac := float64(reused) / float64(prompt)
	t.Logf("%s: turns 2-10 reused %d of %d prompt ids (%.1f%%); engine hit rate %.3f; pool %d/%d blocks, seq %d, tree %d, evictions %d",
		rel, reused, prompt, 100*frac, st.HitRate, st.PoolUsed, st.PoolBlocks, st.SeqBlocks, st.TreeBlocks, st.Evictions)
	if frac < 0.9 {
		t.Fatalf("reuse %.3f < 0.9", frac)
	}
	if st.PoolBlocks == 0 || st.SeqBlocks == 0 || st.TotalPromptTokens == 0 {
		t.Fatalf("paged stats missing: %+v", st)
	}
	if st.KVFormatK != f {
		t.Fatalf("keys stored as %q, want %q", st.KVFormatK, f)
	}
}

// TestPrefixCacheAcrossConversations: a regenerated reply, an edited earlier
// message, a second conversation with the same system prompt and a return
// to the first conversation all reuse the longest cached prefix (the tree
// keeps conversation A while B runs) and decode exactly as a cold engine.
func TestPrefixCacheAcrossConversations(t *testing.T) {
	m := loadModel(t, "course/student.pt")
	e := New(m)
	defer e.Close()
	tok := m.Tokenizer()
	g := sampler.Params{Greedy: true}
	cold := func(p []int, n int) Result {
		c := NewWithOptions(m, Options{NoPrefixCache: true})
		defer c.Close()
		return run(t, c, Request{Prompt: p, MaxTokens: n, Sampler: g})
	}
	check := func(what string, p []int, minReuse int) Result {
		t.Helper()
		r := run(t, e, Request{Prompt: p, MaxTokens: 6, Sampler: g})
		if want := cold(p, 6); !slices.Equal(r.IDs, want.IDs) {
			t.Fatalf("%s: ids %v, cold %v", what, r.IDs, want.IDs)
		}
		if r.Stats.ReusedTokens < minReuse {
			t.Fatalf("%s: reused %d of %d, want >= %d", what, r.Stats.ReusedTokens, len(p), minReuse)
		}
		t.Logf("%s: reused %d of %d", what, r.Stats.ReusedTokens, len(p))
		return r
	}
	sys := tok.Encode(strings.Repeat("You are a kind storyteller who tells short stories about animals. ", 2))
	bs := kvcache.DefaultBlockSize
	whole := func(n int) int { return n / bs * bs }

	a1 := append(slices.Clone(sys), tok.Encode(" Tell me about a cat and a dog who were friends.")...)
	r := check("A turn 1", a1, 0)
	a2 := append(append(slices.Clone(a1), r.IDs...), tok.Encode(" What happened next?")...)
	r = check("A turn 2", a2, len(a1))
	check("A turn 2 regenerated", a2, len(a2)-1)
	edited := append(slices.Clone(sys), tok.Encode(" Tell me about a bird.")...)
	check("A turn 1 edited", edited, whole(len(sys)))
	b1 := append(slices.Clone(sys), tok.Encode(" Sing a song about the sea.")...)
	rb := check("B turn 1", b1, whole(len(sys)))
	b2 := append(append(slices.Clone(b1), rb.IDs...), tok.Encode(" Again!")...)
	check("B turn 2", b2, len(b1))
	// Back to A: its blocks are still in the tree.
	a3 := append(append(slices.Clone(a2), r.IDs...), tok.Encode(" And then?")...)
	check("A turn 3 after B", a3, whole(len(a2)))
}

// TestPrefixCachePartialBlock: a prompt that ends inside a block is shared
// up to its last id from the prefix tree, not only in whole blocks, when
// another reply ran in between (so the last reply's sequence is not it):
// the shared block is copied before a reply writes into it, so the tree's
// copy still gives every later reply the cold ids.
func TestPrefixCachePartialBlock(t *testing.T) {
	m := loadModel(t, "course/student.pt")
	e := New(m)
	defer e.Close()
	tok := m.Tokenizer()
	g := sampler.Params{Greedy: true}
	bs := kvcache.DefaultBlockSize
	p := tok.Encode("Once upon a time there was a little girl called Lily who loved her red ball.")
	if len(p)%bs == 0 || len(p) < bs {
		t.Fatalf("the prompt's %d ids should end inside a block after the first", len(p))
	}
	other := tok.Encode("The sun was hot and the sea was blue.")
	fork := append(slices.Clone(p[:len(p)-2]), tok.Encode(" big dog.")...)
	c := NewWithOptions(m, Options{NoPrefixCache: true})
	defer c.Close()
	cold := map[string][]int{}
	for name, q := range map[string][]int{"p": p, "fork": fork} {
		cold[name] = run(t, c, Request{Prompt: q, MaxTokens: 8, Sampler: g}).IDs
	}
	for i, step := range []struct {
		name   string
		prompt []int
		reuse  int
	}{
		{"p", p, 0},
		{"other", other, 0},
		{"p", p, len(p) - 1},       // all but the id re-fed for logits
		{"fork", fork, len(p) - 2}, // writes where p's block goes on
		{"other", other, len(other) - 1},
		{"p", p, len(p) - 1}, // p's block as it was
	} {
		r := run(t, e, Request{Prompt: step.prompt, MaxTokens: 8, Sampler: g})
		if want, ok := cold[step.name]; ok && !slices.Equal(r.IDs, want) {
			t.Fatalf("step %d (%s): ids %v, cold %v", i, step.name, r.IDs, want)
		}
		if r.Stats.ReusedTokens != step.reuse {
			t.Fatalf("step %d (%s): reused %d of %d, want %d", i, step.name, r.Stats.ReusedTokens, len(step.prompt), step.reuse)
		}
	}
}

// TestKVExportImport: a conversation exported after turn 1 and imported into
// a fresh engine continues with the same ids as the original, prefilling
// only the new part; bad files are refused with clear errors.
func TestKVExportImport(t *testing.T) {
	for _, rel := range []string{"course/student.pt", "stories260K/stories260K.gguf"} {
		t.Run(rel, func(t *testing.T) { testKVExportImport(t, loadModel(t, rel)) })
	}
}

func testKVExportImport(t *testing.T, m models.Model) {
	tok := m.Tokenizer()
	g := sampler.Params{Greedy: true}
	p1 := tok.Encode("Once upon a time there was a little girl named Lily. She liked to")
	a := New(m)
	defer a.Close()
	r1 := run(t, a, Request{Prompt: p1, MaxTokens: 12, Sampler: g})
	var buf bytes.Buffer
	if err := a.ExportKV(&buf); err != nil {
		t.Fatal(err)
	}
	p2 := append(append(slices.Clone(p1), r1.IDs...), tok.Encode(" One day")...)
	want := run(t, a, Request{Prompt: p2, MaxTokens: 12, Sampler: g})

	b := New(m)
	defer b.Close()
	ids, err := b.ImportKV(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 || !slices.Equal(ids, p2[:len(ids)]) {
		t.Fatalf("imported ids %v are not a prefix of the next prompt", ids)
	}
	got := run(t, b, Request{Prompt: p2, MaxTokens: 12, Sampler: g})
	if !slices.Equal(got.IDs, want.IDs) || got.Stats.ReusedTokens != len(ids) {
		t.Fatalf("after import: ids %v (reused %d of %d), original %v", got.IDs, got.Stats.ReusedTokens, len(ids), want.IDs)
	}

	good := buf.Bytes()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", good[:len(good)/2], "truncated"},
		{"corrupted", func() []byte { x := slices.Clone(good); x[len(x)/2] ^= 1; return x }(), "checksum"},
		{"empty", nil, "truncated"},
	} {
		if _, err := b.ImportKV(bytes.NewReader(c.data)); err == nil || !errors.Is(err, kvcache.ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	other := New(loadModel(t, "course/tiny.pt"))
	defer other.Close()
	if _, err := other.ImportKV(bytes.NewReader(good)); err == nil || !strings.Contains(err.Error(), "written by model") {
		t.Errorf("foreign model: %v", err)
	}
	// The refused imports changed nothing.
	if again := run(t, b, Request{Prompt: p2, MaxTokens: 12, Sampler: g}); !slices.Equal(again.IDs, want.IDs) {
		t.Fatalf("after refused imports: %v", again.IDs)
	}
	if err := NewWithOptions(m, Options{NoPrefixCache: true}).ExportKV(&buf); err == nil || !strings.Contains(err.Error(), "nothing cached") {
		t.Errorf("export from a fresh engine: %v", err)
	}
}

// TestTinyKVMem: with a pool of the minimum size the engine evicts old
// prefixes and keeps answering exactly as the contiguous cache does.
func TestTinyKVMem(t *testing.T) {
	for _, rel := range []string{"course/student.pt", "stories260K/stories260K.gguf"} {
		t.Run(rel, func(t *testing.T) {
			if strings.HasPrefix(rel, "stories") && os.Getenv("CHAT_SLOW_TESTS") == "" {
				t.Skip("a 2048-position window: about 10 s; set CHAT_SLOW_TESTS=1")
			}
			testTinyKVMem(t, loadModel(t, rel))
		})
	}
}

func testTinyKVMem(t *testing.T, m models.Model) {
	e := NewWithOptions(m, Options{KVMem: 1}) // raised to MinKVBlocks
	defer e.Close()
	c := NewWithOptions(m, Options{NoPrefixCache: true})
	defer c.Close()
	tok := m.Tokenizer()
	g := sampler.Params{Greedy: true}
	var last Stats
	// Four different prompts of half a window each, then the first again:
	// together about twice what the pool holds.
	n := m.Info().ContextLength/2 - 20
	for i, k := range []int{0, 1, 2, 3, 0} {
		words := strings.Fields(fmt.Sprintf("Story %d: once upon a time a %s went to the %s and found a %s.", k,
			[]string{"cat", "dog", "fox", "owl"}[k], []string{"sea", "park", "shop", "hill"}[k], []string{"box", "hat", "key", "cup"}[k]))
		var p []int
		for j := 0; len(p) < n; j++ {
			p = append(p, tok.Encode(" "+words[j%len(words)])...)
		}
		p = p[:n]
		r := run(t, e, Request{Prompt: p, MaxTokens: 8, Sampler: g})
		want := run(t, c, Request{Prompt: p, MaxTokens: 8, Sampler: g})
		if r.Err != nil || !slices.Equal(r.IDs, want.IDs) {
			t.Fatalf("prompt %d: %v ids %v, want %v", i, r.Err, r.IDs, want.IDs)
		}
		last = r.Stats
	}
	if last.PoolBlocks != MinKVBlocks(m.Info().ContextLength, kvcache.DefaultBlockSize) || last.Evictions == 0 {
		t.Fatalf("pool %d blocks (want the minimum), %d evictions", last.PoolBlocks, last.Evictions)
	}
	t.Logf("pool %d blocks, %d evictions", last.PoolBlocks, last.Evictions)
}

// TestPagedDecodeStepDoesNotAllocate: the cache side of a decode step on
// the paged cache (student.pt) — the window rule's forward, block
// boundaries, copy-on-write of a shared block, pool stats — allocates
// nothing. (The sampler, detok and reply buffer are TestDecodeStepDoesNot
// Allocate's; student.pt's tokenizer copies TokenBytes, which is not the
// cache's to fix.)
func TestPagedDecodeStepDoesNotAllocate(t *testing.T) {
	m := loadModel(t, "course/student.pt")
	e := New(m)
	defer e.Close()
	tok := m.Tokenizer()
	p := tok.Encode("Once upon a time there was a little dog. The dog liked to run in the park with his friends.")
	run(t, e, Request{Prompt: p, MaxTokens: 20, Sampler: sampler.Params{Greedy: true}}) // fills the tree
	copies := e.pool.Copies()
	r := &Reply{req: Request{Prompt: p, MaxTokens: 1 << 30, Sampler: knobs["penalties"]}, start: time.Now(), done: make(chan struct{})}
	g := e.begin(r)
	if g.stats.ReusedTokens == 0 || g.reason != "" {
		t.Fatalf("no reuse (%d): %v", g.stats.ReusedTokens, g.err)
	}
	g.ctx = slices.Grow(g.ctx, 1<<16)
	g.cached = slices.Grow(g.cached, 1<<16)
	if a := testing.AllocsPerRun(100, func() {
		g.ctx = append(g.ctx, 7)
		if _, err := g.next(); err != nil {
			t.Fatal(err)
		}
		g.kvStats()
	}); a != 0 {
		t.Errorf("%v allocs per paged step", a)
	}
	if e.pool.Copies() == copies {
		t.Error("the shared last block was not copied on write")
	}
	g.finishCache()
}
