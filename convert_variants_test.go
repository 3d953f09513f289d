package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"chat/models/course"
	"chat/models/llama"
	"chat/models/modeltest"
	"chat/models/testmodels"
	"chat/models/testmodels/r50k"
	"chat/models/torchpt"
)

// postTrainingWeights are random weights of a small modern course model
// (GQA, QK-norm, tied) with the post-training vocabulary (50304 rows), its
// backbone under a reward model's transformer. prefix.
func postTrainingWeights() (testmodels.StateDict, map[string]any) {
	const V, C, H, KV, L, F = 50304, 32, 4, 2, 2, 128 // F: ffn_hidden 0 is round_up(8*C/3, 64)
	D := C / H
	r := rand.New(rand.NewPCG(1, 2))
	sd := testmodels.StateDict{}
	add := func(key string, scale float64, one bool, shape ...int) *testmodels.PT {
		n := 1
		for _, d := range shape {
			n *= d
		}
		p := &testmodels.PT{Shape: shape, F32: make([]float32, n)}
		for i := range p.F32 {
			p.F32[i] = float32(r.NormFloat64() * scale)
			if one {
				p.F32[i]++
			}
		}
		sd["transformer."+key] = p
		return p
	}
	w := 0.6 / math.Sqrt(C)
	sd["transformer.lm_head.weight"] = add("token_embed.weight", 1, false, V, C)
	add("final_norm.weight", 0.1, true, C)
	for l := range L {
		b := fmt.Sprintf("blocks.%d.", l)
		add(b+"attn_norm.weight", 0.1, true, C)
		add(b+"mlp_norm.weight", 0.1, true, C)
		add(b+"attn.q_proj.weight", w, false, H*D, C)
		add(b+"attn.k_proj.weight", w, false, KV*D, C)
		add(b+"attn.v_proj.weight", w, false, KV*D, C)
		add(b+"attn.o_proj.weight", w, false, C, H*D)
		add(b+"attn.q_norm.weight", 0.1, true, D)
		add(b+"attn.k_norm.weight", 0.1, true, D)
		add(b+"mlp.gate.weight", w, false, F, C)
		add(b+"mlp.up.weight", w, false, F, C)
		add(b+"mlp.down.weight", w, false, C, F)
	}
	sd["reward_head.weight"] = &testmodels.PT{Shape: []int{1, C}, F32: make([]float32, C)}
	cfg := map[string]any{"arch": "modern", "vocab_size": int64(V), "context_length": int64(64), "n_embed": int64(C),
		"n_head": int64(H), "n_blocks": int64(L), "n_kv_head": int64(KV), "attention": "gqa", "kv_latent_dim": nil,
		"rope_theta": 10000.0, "qk_norm": true, "attn_gate": false, "sliding_window": nil, "tie_embeddings": true,
		"n_experts": int64(0), "moe_top_k": int64(2), "n_shared_experts": int64(0), "ffn_hidden": int64(0)}
	return sd, cfg
}

// int8Trainer is tiny.pt as a state dict saved after the course's
// quantize_int8 (its matrices but lm_head and the embeddings as weight_int8
// and scale), with an empty cfg beside its config.
func int8Trainer(t *testing.T) map[string]any {
	ck, err := torchpt.Open(testmodels.Path(t, "course/tiny.pt"))
	if err != nil {
		t.Fatal(err)
	}
	sd := testmodels.StateDict{}
	for k, w := range ck.Tensors {
		if len(w.Shape) != 2 || strings.HasPrefix(k, "lm_head.") || strings.HasSuffix(k, "embed.weight") {
			sd[k] = &testmodels.PT{Shape: w.Shape, F32: w.F32}
			continue
		}
		rows, cols := w.Shape[0], w.Shape[1]
		q := &testmodels.PT{Shape: w.Shape, I8: make([]int8, rows*cols)}
		s := &testmodels.PT{Shape: []int{rows, 1}, F32: make([]float32, rows)}
		for i := range rows {
			var amax float32
			for _, v := range w.F32[i*cols : (i+1)*cols] {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			s.F32[i] = max(amax, 1e-8) / 127
			for j, v := range w.F32[i*cols : (i+1)*cols] {
				q.I8[i*cols+j] = int8(max(-127, min(127, math.RoundToEven(float64(v/s.F32[i])))))
			}
		}
		base := strings.TrimSuffix(k, ".weight")
		sd[base+".weight_int8"], sd[base+".scale"] = q, s
	}
	return map[string]any{"model_state_dict": sd, "cfg": map[string]any{}, "config": ck.Config, "step": 400}
}

// TestConvertVariants: chat convert writes checkpoints the course makes
// beyond the shared ones (a reward model's post-training file with r50k_base
// from tiktoken's cache; a state dict saved after quantize_int8, with an
// empty cfg), and the GGUF runs as the checkpoint does here; with
// CHAT_LLAMACPP=1 llama.cpp gives the same greedy ids and tokenizes as the
// course's tokenizer does.
func TestConvertVariants(t *testing.T) {
	r50k.Cache(t)
	dir := t.TempDir()
	sd, cfg := postTrainingWeights()
	testmodels.TorchSave(t, filepath.Join(dir, "reward.pt"), map[string]any{"model_state_dict": sd, "cfg": cfg,
		"stage": "reward", "optimizer_state_dict": nil, "step": 10, "metrics": map[string]any{}})
	testmodels.TorchSave(t, filepath.Join(dir, "tiny-int8.pt"), int8Trainer(t))

	// The reward model chats (its stage), with r50k_base from the cache;
	// without the file it is one line saying where tiktoken keeps it.
	if code, stdout, stderr := runCLI("--model", filepath.Join(dir, "reward.pt"), "--prompt", "Hi", "-n", "4", "--greedy"); code != 0 || stdout == "" {
		t.Fatalf("chat: exit %d %q %q", code, stdout, stderr)
	}
	t.Setenv("TIKTOKEN_CACHE_DIR", t.TempDir())
	code, _, stderr := runCLI("--model", filepath.Join(dir, "reward.pt"), "--prompt", "Hi")
	if code != 1 || !strings.Contains(stderr, "tiktoken r50k_base") || !strings.Contains(stderr, "is not in tiktoken's cache") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("no rank file: exit %d %q", code, stderr)
	}
	r50k.Cache(t)

	texts := []string{"Once upon a time", "Hello, world! It's 2024.\n\n  x", "<|user|>\nHi<|endoftext|>"}
	for _, name := range []string{"reward", "tiny-int8"} {
		t.Run(name, func(t *testing.T) {
			ckpt, out := filepath.Join(dir, name+".pt"), filepath.Join(dir, name+".gguf")
			if code, stdout, stderr := runCLI("convert", ckpt, out); code != 0 {
				t.Fatalf("exit %d: %s %s", code, stdout, stderr)
			}
			cm, err := course.Load(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			gm, err := llama.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			defer gm.Close()
			prompt := cm.Tokenizer().Encode(texts[0])
			want := modeltest.Greedy(t, cm, prompt, 16)
			if got := modeltest.Greedy(t, gm, prompt, 16); !slices.Equal(got, want) {
				t.Fatalf("GGUF greedy %v, checkpoint %v", got, want)
			}
			for _, s := range texts {
				if a, b := gm.Tokenizer().Encode(s), cm.Tokenizer().Encode(s); !slices.Equal(a, b) {
					t.Errorf("%q: GGUF tokens %v, checkpoint %v", s, a, b)
				}
			}

			res := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: out, Prompts: [][]int{prompt}, NGen: 16, Texts: texts})
			for i, id := range res.Greedy[0] {
				if id != want[i] {
					top := res.Top2[0][i]
					if gap := top[0][1] - top[1][1]; gap > 1e-3 {
						t.Errorf("llama.cpp greedy %v, this app %v (step %d, llama.cpp's margin %g)", res.Greedy[0], want, i, gap)
					}
					break
				}
			}
			for i, s := range texts {
				if want := cm.Tokenizer().Encode(s); !slices.Equal(res.Tokens[i], want) && len(want) > 0 {
					t.Errorf("%q: llama.cpp tokens %v, course %v", s, res.Tokens[i], want)
				}
			}
		})
	}
}
