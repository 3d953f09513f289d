package course

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"chat/models/kvcache"
	"chat/models/testmodels"
)

// synthTensors builds random weights with exactly the shapes cfg asks for,
// using the same key names as the course's state_dict.
func synthTensors(t testing.TB, raw map[string]any, seed uint64) map[string]tensor {
	t.Helper()
	c, err := parseConfig(raw, "config")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	ts := map[string]tensor{}
	add := func(key string, scale float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(r.NormFloat64()) * scale
		}
		ts[key] = tensor{DType: "float32", Shape: shape, F32: data}
	}
	ones := func(key string, n int) {
		add(key, 0.1, n)
		for i := range ts[key].F32 {
			ts[key].F32[i] += 1
		}
	}
	V, T, C, H, D := c.Vocab, c.Ctx, c.Embed, c.Heads, c.HeadDim
	w := float32(0.3 / math.Sqrt(float64(C)))
	if c.Arch == "classic" {
		add("token_embed.weight", 0.5, V, C)
		add("position_embed.weight", 0.5, T, C)
		for l := 0; l < c.Blocks; l++ {
			p := fmt.Sprintf("attn_blocks.%d.", l)
			ones(p+"ln1.weight", C)
			add(p+"ln1.bias", 0.1, C)
			ones(p+"ln2.weight", C)
			add(p+"ln2.bias", 0.1, C)
			for h := 0; h < H; h++ {
				for _, n := range []string{"key", "query", "value"} {
					add(fmt.Sprintf("%sattn.heads.%d.%s.weight", p, h, n), 3*w, D, C)
				}
			}
			add(p+"attn.proj.weight", w, C, C)
			add(p+"attn.proj.bias", 0.1, C)
			add(p+"mlp.hidden.weight", w, 4*C, C)
			add(p+"mlp.hidden.bias", 0.1, 4*C)
			add(p+"mlp.proj.weight", w, C, 4*C)
			add(p+"mlp.proj.bias", 0.1, C)
		}
		ones("layer_norm.weight", C)
		add("layer_norm.bias", 0.1, C)
		add("lm_head.weight", w*3, V, C)
		add("lm_head.bias", 0.1, V)
		return ts
	}
	add("token_embed.weight", 0.5, V, C)
	if c.Tied {
		ts["lm_head.weight"] = ts["token_embed.weight"]
	} else {
		add("lm_head.weight", 0.5, V, C)
	}
	ones("final_norm.weight", C)
	swiglu := func(p string, f int) {
		add(p+"gate.weight", w, f, C)
		add(p+"up.weight", w, f, C)
		add(p+"down.weight", w, C, f)
	}
	for l := 0; l < c.Blocks; l++ {
		p := fmt.Sprintf("blocks.%d.", l)
		ones(p+"attn_norm.weight", C)
		ones(p+"mlp_norm.weight", C)
		a := p + "attn."
		if c.Attention == "mla" {
			add(a+"q_proj.weight", 3*w, H*(D+c.RopeDim), C)
			add(a+"kv_down.weight", 3*w, c.Latent+c.RopeDim, C)
			ones(a+"kv_norm.weight", c.Latent)
			add(a+"k_up.weight", 0.3, H*D, c.Latent)
			add(a+"v_up.weight", 0.3, H*D, c.Latent)
		} else {
			add(a+"q_proj.weight", 3*w, H*D, C)
			add(a+"k_proj.weight", 3*w, c.KVHeads*D, C)
			add(a+"v_proj.weight", 3*w, c.KVHeads*D, C)
			if c.QKNorm {
				ones(a+"q_norm.weight", D)
				ones(a+"k_norm.weight", D)
			}
			if c.AttnGate {
				add(a+"gate.weight", w, H*D, C)
			}
		}
		add(a+"o_proj.weight", w, C, H*D)
		if c.Experts > 0 {
			add(p+"mlp.router.weight", 3*w, c.Experts, C)
			for e := 0; e < c.Experts; e++ {
				swiglu(fmt.Sprintf("%smlp.experts.%d.", p, e), c.FFN)
			}
			if c.Shared > 0 {
				swiglu(p+"mlp.shared.", c.FFN*c.Shared)
			}
		} else {
			swiglu(p+"mlp.", c.FFN)
		}
	}
	return ts
}

// synthConfigs are small configs covering every architecture option.
func synthConfigs() map[string]map[string]any {
	base := func(kv ...any) map[string]any {
		m := map[string]any{"vocab_size": int64(97), "context_length": int64(24), "n_embed": int64(32),
			"n_head": int64(4), "n_blocks": int64(2), "arch": "modern"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	classic := base()
	delete(classic, "arch")
	return map[string]map[string]any{
		"classic":  classic,
		"modern":   base(),
		"gqa":      base("n_kv_head", int64(2)),
		"mqa":      base("n_kv_head", int64(1), "qk_norm", false),
		"gate":     base("attn_gate", true),
		"window":   base("sliding_window", int64(5)),
		"mla":      base("attention", "mla"),
		"moe":      base("n_experts", int64(4), "moe_top_k", int64(2), "n_shared_experts", int64(1)),
		"moe-top1": base("n_experts", int64(3), "moe_top_k", int64(1)),
		"untied":   base("tie_embeddings", false, "ffn_hidden", int64(40)),
	}
}

func synthModel(t testing.TB, raw map[string]any, seed uint64) *Model {
	t.Helper()
	m, err := newModel("synth.pt", synthTensors(t, raw, seed), raw, "config")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func randTokens(r *rand.Rand, n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(vocab)
	}
	return ids
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// TestSyntheticCacheConsistency checks on random weights that every way of
// feeding a sequence (one batch, token by token, in chunks, with rows > 1)
// gives the same logits as one full forward.
func TestSyntheticCacheConsistency(t *testing.T) {
	for name, raw := range synthConfigs() {
		t.Run(name, func(t *testing.T) {
			m := synthModel(t, raw, 7)
			V := m.Info().VocabSize
			r := rand.New(rand.NewPCG(3, 4))
			ids := randTokens(r, m.Info().ContextLength, V)

			full := kvcache.NewState(m)
			all, err := full.Forward(ids, len(ids))
			if err != nil {
				t.Fatal(err)
			}
			all = append([]float32(nil), all...)

			step := kvcache.NewState(m)
			for i, id := range ids {
				lg, err := step.Forward([]int{id}, 1)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(lg, all[i*V:(i+1)*V]); d > 1e-4 {
					t.Fatalf("token %d: decode vs batch max diff %g", i, d)
				}
			}
			if _, err := step.Forward([]int{1}, 1); err == nil {
				t.Fatal("Forward past Cap() did not fail")
			}

			chunk := kvcache.NewState(m)
			for i := 0; i < len(ids); {
				n := min(5, len(ids)-i)
				lg, err := chunk.Forward(ids[i:i+n], 2)
				if err != nil {
					t.Fatal(err)
				}
				r := min(2, n)
				if d := maxAbsDiff(lg, all[(i+n-r)*V:(i+n)*V]); d > 1e-4 {
					t.Fatalf("chunk at %d: max diff %g", i, d)
				}
				i += n
			}

			// Truncate and re-feed gives the same as before.
			chunk.Truncate(10)
			lg, err := chunk.Forward(ids[10:12], 1)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(lg, all[11*V:12*V]); d > 1e-4 {
				t.Fatalf("after Truncate: max diff %g", d)
			}
		})
	}
}

// TestSyntheticSlidingWindowMasks checks the reach of a sliding window.
func TestSyntheticSlidingWindowMasks(t *testing.T) {
	raw := synthConfigs()["window"]
	m := synthModel(t, raw, 11)
	V := m.Info().VocabSize
	r := rand.New(rand.NewPCG(5, 6))
	ids := randTokens(r, 12, V)
	// With window 5 and 2 layers, position 11 sees 7..11 in layer 2, which
	// saw 3..11 in layer 1: token 0 cannot matter, token 10 must.
	s := kvcache.NewState(m)
	a, _ := s.Forward(ids, 1)
	a = append([]float32(nil), a...)
	ids2 := append([]int(nil), ids...)
	ids2[0] = (ids2[0] + 1) % V
	s.Truncate(0)
	b, _ := s.Forward(ids2, 1)
	if d := maxAbsDiff(a, b); d != 0 {
		t.Fatalf("token outside the sliding window's reach changed the logits by %g", d)
	}
	ids2 = append([]int(nil), ids...)
	ids2[10] = (ids2[10] + 1) % V
	s.Truncate(0)
	b, _ = s.Forward(ids2, 1)
	if d := maxAbsDiff(a, b); d == 0 {
		t.Fatal("token inside the window did not change the logits")
	}
}

func TestSyntheticDecodeAllocs(t *testing.T) {
	for name, raw := range synthConfigs() {
		t.Run(name, func(t *testing.T) {
			m := synthModel(t, raw, 9)
			s := kvcache.NewState(m)
			if _, err := s.Forward([]int{1, 2, 3, 4}, 1); err != nil {
				t.Fatal(err)
			}
			tok := []int{5}
			allocs := testing.AllocsPerRun(20, func() {
				s.Truncate(4)
				if _, err := s.Forward(tok, 1); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("decode step allocates %v times", allocs)
			}
		})
	}
}

func TestSyntheticBadInput(t *testing.T) {
	m := synthModel(t, synthConfigs()["modern"], 1)
	s := kvcache.NewState(m)
	for _, ids := range [][]int{nil, {-1}, {97}, make([]int, 25)} {
		if _, err := s.Forward(ids, 1); err == nil {
			t.Errorf("Forward(%v) did not fail", ids)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("failed Forward changed Len to %d", s.Len())
	}
}

func TestSyntheticParams(t *testing.T) {
	// The course's formula for classic: V·C + T·C + L·(12C² + 10C) + 2C + C·V + V.
	raw := synthConfigs()["classic"]
	m := synthModel(t, raw, 1)
	V, T, C, L := int64(97), int64(24), int64(32), int64(2)
	if want := V*C + T*C + L*(12*C*C+10*C) + 2*C + C*V + V; m.Info().Params != want {
		t.Fatalf("classic params %d, want %d", m.Info().Params, want)
	}
	// Tied modern: embedding once; untied: twice.
	tied := synthModel(t, synthConfigs()["modern"], 1).Info().Params
	raw = synthConfigs()["modern"]
	raw["tie_embeddings"] = false
	untied := synthModel(t, raw, 1).Info().Params
	if untied-tied != V*C {
		t.Fatalf("untied-tied = %d, want %d", untied-tied, V*C)
	}
}

func TestSyntheticShapeErrors(t *testing.T) {
	raw := synthConfigs()["modern"]
	cases := []struct {
		name string
		edit func(map[string]tensor)
		want string
	}{
		{"wrong shape", func(ts map[string]tensor) {
			k := "blocks.1.attn.q_proj.weight"
			ts[k] = tensor{DType: "float32", Shape: []int{32, 16}, F32: make([]float32, 512)}
		}, "course: synth.pt: blocks.1.attn.q_proj.weight has shape [32 16], config expects [32 32] (n_head=4, head_dim=8, n_embed=32)"},
		{"missing", func(ts map[string]tensor) { delete(ts, "blocks.0.mlp.down.weight") },
			"course: synth.pt: missing blocks.0.mlp.down.weight"},
		{"dtype", func(ts map[string]tensor) {
			ts["final_norm.weight"] = tensor{DType: "int64", Shape: []int{32}}
		}, "final_norm.weight has dtype int64, want float32"},
		{"short data", func(ts map[string]tensor) {
			ts["final_norm.weight"] = tensor{DType: "float32", Shape: []int{32}, F32: make([]float32, 3)}
		}, "final_norm.weight holds 3 values"},
		{"extra key ignored", func(ts map[string]tensor) {
			ts["reward_head.weight"] = tensor{DType: "float32", Shape: []int{1, 32}, F32: make([]float32, 32)}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := synthTensors(t, raw, 1)
			tc.edit(ts)
			_, err := newModel("synth.pt", ts, raw, "config")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

// TestSyntheticBadConfigs: each bad config value is refused with one short
// line, a hostile string in it quoted and cut (models/quote).
func TestSyntheticBadConfigs(t *testing.T) {
	long := "\n" + testmodels.HostileName(1<<20) // a newline too: a pickle's string may hold one
	cases := []struct {
		edit map[string]any
		want string
	}{
		{map[string]any{"n_embed": int64(30)}, "not divisible by n_head"},
		{map[string]any{"n_embed": int64(30), "n_head": int64(6)}, "odd"},
		{map[string]any{"n_kv_head": int64(3)}, "not divisible by n_kv_head"},
		{map[string]any{"n_kv_head": int64(-1)}, "n_kv_head=-1 is out of range"},
		{map[string]any{"n_blocks": int64(-1)}, "n_blocks=-1"},
		{map[string]any{"vocab_size": int64(0)}, "vocab_size=0"},
		{map[string]any{"context_length": int64(1) << 40}, "context_length"},
		{map[string]any{"context_length": int64(1) << 19, "n_blocks": int64(64)}, "refusing"},
		{map[string]any{"n_head": nil}, "n_head is missing or None"},
		{map[string]any{"n_head": "four"}, "want an integer"},
		{map[string]any{"n_embed": 32.5}, "not an integer"},
		{map[string]any{"arch": "rnn"}, `arch "rnn" is unknown`},
		{map[string]any{"attention": "linear"}, `attention "linear" is unknown`},
		{map[string]any{"attention": "mla", "rope_dim": int64(3)}, "rope_dim=3 is odd"},
		{map[string]any{"n_experts": int64(2), "moe_top_k": int64(3)}, "moe_top_k=3"},
		{map[string]any{"sliding_window": int64(-2)}, "sliding_window=-2"},
		{map[string]any{"sliding_window": int64(0)}, "sliding_window=0 is not positive"},
		{map[string]any{"arch": "classic", "n_blocks": int64(4096), "n_head": int64(4096), "n_embed": int64(4096), "context_length": int64(1)}, "refusing more than 1048576"},
		{map[string]any{"rope_theta": -1.0}, "rope_theta"},
		{map[string]any{"qk_norm": "yes"}, "want a bool"},
		{map[string]any{"arch": long}, "is unknown"},
		{map[string]any{"arch": []any{long}}, "want a string"},
		{map[string]any{"attention": long}, "is unknown"},
		{map[string]any{"attention": []any{long}}, "want \"gqa\""},
		{map[string]any{"n_head": long}, "want an integer"},
		{map[string]any{"rope_theta": long}, "want a number"},
		{map[string]any{"qk_norm": long}, "want a bool"},
	}
	for _, tc := range cases {
		raw := synthConfigs()["modern"]
		for k, v := range tc.edit {
			raw[k] = v
		}
		_, err := newModel("synth.pt", map[string]tensor{}, raw, "config")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %.200v: error %.200v, want it to contain %q", tc.edit, err, tc.want)
			continue
		}
		testmodels.OneShortLine(t, err, 300)
	}
}

// TestSyntheticZeroMeansDefault: ModernConfig derives ffn_hidden, n_kv_head,
// kv_latent_dim and rope_dim with `or`, so 0 is the default, as None is.
func TestSyntheticZeroMeansDefault(t *testing.T) {
	for _, tc := range []struct{ arch, key string }{
		{"modern", "ffn_hidden"}, {"modern", "n_kv_head"}, {"mla", "kv_latent_dim"}, {"mla", "rope_dim"},
	} {
		raw := synthConfigs()[tc.arch]
		ts := synthTensors(t, raw, 4)
		zero := synthConfigs()[tc.arch]
		zero[tc.key] = int64(0)
		m, err := newModel("zero.pt", ts, zero, "config")
		if err != nil {
			t.Errorf("%s=0: %v", tc.key, err)
			continue
		}
		ids := []int{3, 14, 15, 92, 65}
		a, _ := kvcache.NewState(m).Forward(ids, 1)
		b, _ := kvcache.NewState(synthModel(t, raw, 4)).Forward(ids, 1)
		if d := maxAbsDiff(a, b); d != 0 {
			t.Errorf("%s=0: logits differ from the default's by %g", tc.key, d)
		}
	}
}

// TestSyntheticGQAEqualsMHA checks repeat_interleave grouping: a GQA model
// equals the MHA model whose k/v heads are the GQA heads repeated per group
// (the course's test_gqa_equals_mha_with_shared_heads).
func TestSyntheticGQAEqualsMHA(t *testing.T) {
	raw := synthConfigs()["gqa"]
	ts := synthTensors(t, raw, 2)
	gqa, err := newModel("gqa.pt", ts, raw, "config")
	if err != nil {
		t.Fatal(err)
	}
	mraw := synthConfigs()["modern"]
	mts := map[string]tensor{}
	for k, v := range ts {
		mts[k] = v
	}
	D, C := 8, 32
	for l := 0; l < 2; l++ {
		for _, n := range []string{"k_proj", "v_proj"} {
			key := fmt.Sprintf("blocks.%d.attn.%s.weight", l, n)
			src := ts[key].F32
			var dst []float32
			for h := 0; h < 4; h++ {
				g := h / 2
				dst = append(dst, src[g*D*C:(g+1)*D*C]...)
			}
			mts[key] = tensor{DType: "float32", Shape: []int{4 * D, C}, F32: dst}
		}
	}
	mha, err := newModel("mha.pt", mts, mraw, "config")
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{3, 14, 15, 92, 65, 35, 89, 79}
	a, _ := kvcache.NewState(gqa).Forward(ids, len(ids))
	b, _ := kvcache.NewState(mha).Forward(ids, len(ids))
	if d := maxAbsDiff(a, b); d > 1e-5 {
		t.Fatalf("GQA vs repeated-head MHA max diff %g", d)
	}
}

// FuzzConfig feeds arbitrary sizes and flags to the config resolution and the
// loader (with no tensors): it must return an error or a model, never panic.
func FuzzConfig(f *testing.F) {
	f.Add(int64(97), int64(24), int64(32), int64(4), int64(2), int64(2), int64(0), int64(2), int64(0), "gqa", true, false)
	f.Add(int64(4096), int64(128), int64(64), int64(4), int64(2), int64(-1), int64(4), int64(2), int64(1), "mla", false, true)
	f.Add(int64(1), int64(1), int64(2), int64(1), int64(1), int64(1), int64(1), int64(1), int64(0), "x", true, true)
	f.Add(int64(-5), int64(1<<40), int64(0), int64(0), int64(1<<31), int64(0), int64(-3), int64(0), int64(-1), "", false, false)
	f.Fuzz(func(t *testing.T, vocab, ctx, embed, heads, blocks, kv, experts, topk, window int64, attn string, qk, tied bool) {
		raw := map[string]any{"vocab_size": vocab, "context_length": ctx, "n_embed": embed, "n_head": heads,
			"n_blocks": blocks, "arch": "modern", "attention": attn, "n_experts": experts, "moe_top_k": topk,
			"sliding_window": window, "qk_norm": qk, "tie_embeddings": tied}
		if kv >= 0 {
			raw["n_kv_head"] = kv
		}
		if _, err := newModel("fuzz.pt", map[string]tensor{}, raw, "config"); err == nil {
			t.Fatal("a model without tensors loaded")
		}
		delete(raw, "arch")
		if _, err := newModel("fuzz.pt", map[string]tensor{}, raw, "config"); err == nil {
			t.Fatal("a classic model without tensors loaded")
		}
	})
}
